-- vtui ranks as SQL: the cross-rank analysis of vtui/analysis/ranks/analyse.py over per-rank Parquet.
--
-- Input (one folder per rank, written by `vtui ranks FOLDER --engine duckdb` beside the cache):
--   meta(pos, named_rank, file, world_size)           one row per rank file
--   steps(pos, idx, name, start_ns, end_ns)            the rank's steps, epoch ns
--   colls(pos, idx, kind, grp, group_size, bytes, elems, start_ns, end_ns, device, row)
--                                                      collective kernels, in start order
--   comp(pos, device, start_ns, end_ns)                compute kernels
-- The runner (vtui/query/ranks.py) substitutes {meta_files}… (the lists of Parquet files), {rank} (named_rank,
-- or pos where files name no distinct ranks), {align} ('epoch' or 'collective') and {step_key}
-- (name, or idx to align steps by index), then runs the views and each named query in turn; the
-- "rank" blocks at the end once per rank.
-- Only portable SQL (window functions, min_by/max_by, FILTER): Spark SQL runs it as written once
-- the four tables are registered as views (see the README, "Many ranks").

-- view: meta
CREATE OR REPLACE TEMP VIEW meta AS SELECT * FROM read_parquet({meta_files});
-- view: steps
CREATE OR REPLACE TEMP VIEW steps AS SELECT * FROM read_parquet({steps_files});
-- view: colls
CREATE OR REPLACE TEMP VIEW colls AS SELECT * FROM read_parquet({colls_files});
-- view: comp
CREATE OR REPLACE TEMP VIEW comp AS SELECT * FROM read_parquet({comp_files});

-- view: ranked
CREATE OR REPLACE TEMP VIEW ranked AS SELECT pos, {rank} AS rank FROM meta;

-- view: keyed
-- A collective's group: its process group, else its kind ("?all_reduce"); seq: its order in it.
CREATE OR REPLACE TEMP VIEW keyed AS
SELECT c.pos, r.rank, c.idx, c.kind, c.grp, c.group_size, c.bytes, c.elems, c.start_ns, c.end_ns, c.row,
       CASE WHEN c.grp = '' THEN concat('?', c.kind) ELSE c.grp END AS gkey,
       row_number() OVER (PARTITION BY c.pos, CASE WHEN c.grp = '' THEN concat('?', c.kind) ELSE c.grp END
                          ORDER BY c.idx) - 1 AS seq
FROM colls c JOIN ranked r ON r.pos = c.pos;

-- view: verdict
-- Per match (gkey, seq) of two or more ranks: why its kernels disagree where the traces record it
-- (kind, bytes, group size), or NULL.
CREATE OR REPLACE TEMP VIEW verdict AS
SELECT gkey, seq, count(*) AS n,
       CASE WHEN count(*) < 2 THEN NULL
            WHEN count(DISTINCT kind) > 1 THEN 'kinds differ'
            WHEN count(DISTINCT CASE WHEN bytes > 0 THEN bytes END) > 1
                 OR count(DISTINCT CASE WHEN elems > 0 THEN elems END) > 1 THEN 'sizes differ'
            WHEN count(DISTINCT CASE WHEN group_size > 0 THEN group_size END) > 1 THEN 'group sizes differ'
       END AS reason,
       min(kind) AS min_kind, max(kind) AS max_kind,
       min(CASE WHEN bytes > 0 THEN bytes END) AS min_bytes, max(bytes) AS max_bytes,
       min(CASE WHEN group_size > 0 THEN group_size END) AS min_size, max(group_size) AS max_size,
       min(CASE WHEN elems > 0 THEN elems END) AS min_elems, max(elems) AS max_elems
FROM keyed GROUP BY gkey, seq;

-- name: rejected
SELECT gkey, seq, reason, min_kind, max_kind, min_bytes, max_bytes, min_size, max_size, min_elems, max_elems,
       (SELECT count(*) FROM verdict WHERE n > 1) AS matches
FROM verdict WHERE reason IS NOT NULL;

-- view: agreed
-- The collectives whose match holds: a rejected match leaves its kernels unmatched.
CREATE OR REPLACE TEMP VIEW agreed AS
SELECT k.* FROM keyed k JOIN verdict v ON v.gkey = k.gkey AND v.seq = k.seq WHERE v.reason IS NULL;

-- view: first_common
-- The first collective every rank took part in (lowest seq, then group name).
CREATE OR REPLACE TEMP VIEW first_common AS
SELECT gkey, seq FROM agreed GROUP BY gkey, seq
HAVING count(*) = (SELECT count(*) FROM meta)
ORDER BY seq, gkey LIMIT 1;

-- view: offsets
-- ns added to each rank's clock: 0 (epoch), or what lines the end of the first common collective
-- up with the lowest rank's.
CREATE OR REPLACE TEMP VIEW offsets AS
SELECT r.pos, r.rank,
       CASE WHEN '{align}' = 'collective' AND (SELECT count(*) FROM meta) > 1 AND e.end_ns IS NOT NULL
            THEN (SELECT min_by(k.end_ns, k.rank) FROM agreed k JOIN first_common f ON k.gkey = f.gkey AND k.seq = f.seq)
                 - e.end_ns
            ELSE 0 END AS offset_ns
FROM ranked r
LEFT JOIN (SELECT k.pos, k.end_ns FROM agreed k JOIN first_common f ON k.gkey = f.gkey AND k.seq = f.seq) e
  ON e.pos = r.pos;

-- name: first_common
SELECT gkey, seq FROM first_common;

-- view: member
-- One row per (collective, rank) on the aligned clocks.
CREATE OR REPLACE TEMP VIEW member AS
SELECT k.*, k.start_ns + o.offset_ns AS a_start, k.end_ns + o.offset_ns AS a_end, k.end_ns - k.start_ns AS dur,
       min(k.end_ns - k.start_ns) OVER w AS latency_ns,
       min(k.start_ns + o.offset_ns) OVER w AS earliest,
       max(k.start_ns + o.offset_ns) OVER w AS latest
FROM agreed k JOIN offsets o ON o.pos = k.pos
WINDOW w AS (PARTITION BY k.gkey, k.seq);

-- view: coll
-- group_size and bytes: the largest, as the members agree where they know them (verdict).
CREATE OR REPLACE TEMP VIEW coll AS
SELECT gkey, seq,
       min_by(kind, rank) AS name, min_by(grp, rank) AS grp, count(*) AS ranks,
       max(group_size) AS group_size, max(bytes) AS bytes, min(earliest) AS start_ns, min(latency_ns) AS latency_ns,
       max(latest) - min(earliest) AS skew_ns,
       min(rank) FILTER (WHERE a_start = latest) AS last_rank
FROM member GROUP BY gkey, seq;

-- name: collectives
SELECT c.gkey, c.seq, c.name, c.grp, c.ranks, c.group_size, c.bytes, c.start_ns, c.latency_ns, c.skew_ns,
       c.last_rank,
       CASE WHEN c.bytes > 0 AND c.latency_ns > 0 THEN c.bytes / c.latency_ns END AS algbw,
       CASE WHEN c.bytes > 0 AND c.latency_ns > 0 AND c.group_size > 0 THEN c.bytes / c.latency_ns *
            CASE WHEN c.name = 'all_reduce' THEN 2.0 * (c.group_size - 1) / c.group_size
                 WHEN c.name IN ('all_gather', 'reduce_scatter', 'all_to_all') THEN 1.0 * (c.group_size - 1) / c.group_size
                 ELSE 1.0 END END AS busbw,
       (SELECT sum(m.dur - m.latency_ns) FROM member m WHERE m.gkey = c.gkey AND m.seq = c.seq AND m.rank <> c.last_rank)
           AS lost_ns
FROM coll c ORDER BY c.start_ns, c.gkey, c.seq;

-- name: waits
SELECT gkey, seq, rank, dur - latency_ns AS wait_ns, row, a_start FROM member ORDER BY gkey, seq, rank;

-- name: ranks
SELECT m.pos, r.rank, m.file, m.world_size, o.offset_ns,
       (SELECT count(*) FROM steps s WHERE s.pos = m.pos) AS steps,
       (SELECT count(*) FROM colls c WHERE c.pos = m.pos) AS collectives
FROM meta m JOIN ranked r ON r.pos = m.pos JOIN offsets o ON o.pos = m.pos ORDER BY r.rank;

-- name: step_shape
-- Whether steps can be aligned by their annotation: names distinct on every rank, and shared.
SELECT (SELECT count(*) FROM (SELECT pos, name FROM steps GROUP BY pos, name HAVING count(*) > 1) d) AS repeated,
       (SELECT count(*) FROM (SELECT name FROM steps GROUP BY name
                              HAVING count(DISTINCT pos) = (SELECT count(*) FROM meta)) s) AS shared,
       (SELECT count(*) FROM steps) AS total;

-- name: steps
-- Per step and rank: duration and aligned start; the step's collectives are those the lowest
-- rank that has the step ran inside it.
SELECT s.{step_key} AS step_key, r.rank, s.name, s.end_ns - s.start_ns AS dur_ns, s.start_ns + o.offset_ns AS a_start,
       s.end_ns + o.offset_ns AS a_end
FROM steps s JOIN ranked r ON r.pos = s.pos JOIN offsets o ON o.pos = s.pos
ORDER BY step_key, r.rank;

-- name: step_last
-- Per step: how often each rank arrived last at the step's collectives, and the time lost to it.
WITH first_rank AS (
    SELECT s.{step_key} AS step_key, min(r.rank) AS rank FROM steps s JOIN ranked r ON r.pos = s.pos
    GROUP BY s.{step_key}),
window_ AS (
    SELECT f.step_key, s.start_ns + o.offset_ns AS w0, s.end_ns + o.offset_ns AS w1, f.rank
    FROM first_rank f JOIN ranked r ON r.rank = f.rank JOIN steps s ON s.pos = r.pos AND s.{step_key} = f.step_key
    JOIN offsets o ON o.pos = r.pos),
in_step AS (
    SELECT DISTINCT w.step_key, m.gkey, m.seq FROM window_ w
    JOIN member m ON m.rank = w.rank AND m.a_start >= w.w0 AND m.a_start < w.w1)
SELECT i.step_key, c.last_rank, count(*) AS n,
       sum((SELECT sum(m.dur - m.latency_ns) FROM member m WHERE m.gkey = c.gkey AND m.seq = c.seq AND m.rank <> c.last_rank))
           AS lost_ns
FROM in_step i JOIN coll c ON c.gkey = i.gkey AND c.seq = i.seq
GROUP BY i.step_key, c.last_rank ORDER BY i.step_key, c.last_rank;

-- name: step_waits
-- Per step and rank: its waits at the step's collectives (chosen as in step_last), summed.
WITH first_rank AS (
    SELECT s.{step_key} AS step_key, min(r.rank) AS rank FROM steps s JOIN ranked r ON r.pos = s.pos
    GROUP BY s.{step_key}),
window_ AS (
    SELECT f.step_key, s.start_ns + o.offset_ns AS w0, s.end_ns + o.offset_ns AS w1, f.rank
    FROM first_rank f JOIN ranked r ON r.rank = f.rank JOIN steps s ON s.pos = r.pos AND s.{step_key} = f.step_key
    JOIN offsets o ON o.pos = r.pos),
in_step AS (
    SELECT DISTINCT w.step_key, m.gkey, m.seq FROM window_ w
    JOIN member m ON m.rank = w.rank AND m.a_start >= w.w0 AND m.a_start < w.w1)
SELECT i.step_key, m.rank, sum(m.dur - m.latency_ns) AS wait_ns
FROM in_step i JOIN member m ON m.gkey = i.gkey AND m.seq = i.seq
GROUP BY i.step_key, m.rank ORDER BY i.step_key, m.rank;

-- rank view: comm_islands
-- Exposed communication, one rank at a time (so the memory is one rank's, whatever the ranks):
-- unions of the rank's collective kernels and compute kernels per GPU (gaps and islands), then
-- their overlap. {rank_colls} / {rank_comp}: that rank's tables; {rank_filter}: r.pos = that rank
-- (or, run once over all ranks as on Spark: colls, comp and TRUE).
CREATE OR REPLACE TEMP VIEW comm_islands AS
WITH e AS (
    SELECT pos, device, start_ns, end_ns,
           max(end_ns) OVER (PARTITION BY pos, device ORDER BY start_ns, end_ns
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM {rank_colls}),
g AS (
    SELECT *, sum(CASE WHEN reach IS NULL OR start_ns > reach THEN 1 ELSE 0 END)
              OVER (PARTITION BY pos, device ORDER BY start_ns, end_ns ROWS UNBOUNDED PRECEDING) AS island
    FROM e)
SELECT pos, device, min(start_ns) AS s, max(end_ns) AS e FROM g GROUP BY pos, device, island;

-- rank view: comp_islands
CREATE OR REPLACE TEMP VIEW comp_islands AS
WITH e AS (
    SELECT pos, device, start_ns, end_ns,
           max(end_ns) OVER (PARTITION BY pos, device ORDER BY start_ns, end_ns
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM {rank_comp}),
g AS (
    SELECT *, sum(CASE WHEN reach IS NULL OR start_ns > reach THEN 1 ELSE 0 END)
              OVER (PARTITION BY pos, device ORDER BY start_ns, end_ns ROWS UNBOUNDED PRECEDING) AS island
    FROM e)
SELECT pos, device, min(start_ns) AS s, max(end_ns) AS e FROM g GROUP BY pos, device, island;

-- rank name: exposed
SELECT r.rank,
       coalesce((SELECT sum(c.e - c.s) FROM comm_islands c WHERE c.pos = r.pos), 0) AS comm_ns,
       coalesce((SELECT sum(least(c.e, k.e) - greatest(c.s, k.s)) FROM comm_islands c JOIN comp_islands k
                 ON k.pos = c.pos AND k.device = c.device AND k.s < c.e AND k.e > c.s
                 WHERE c.pos = r.pos), 0) AS overlapped_ns
FROM ranked r WHERE {rank_filter} ORDER BY r.rank;
