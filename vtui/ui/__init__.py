"""The Textual explorer: the app, its timeline, the screens over it and the widgets under it."""
