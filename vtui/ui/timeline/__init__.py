"""The timeline room: the view state, its rows and drawing, the pane that moves it, and its widgets."""
