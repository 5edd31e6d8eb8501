-- Canonical tables (design.md §4). Every loader writes into these; times are integer ns unless the
-- column name says otherwise, and every row carries its rank. Columns a source lacks stay NULL.

CREATE TABLE IF NOT EXISTS ranks (
    rank               INTEGER NOT NULL,
    device_id          INTEGER,
    path               VARCHAR,
    source_format      VARCHAR,   -- torch_npu | msprof | db | kineto | trace_view
    torch_npu_version  VARCHAR,
    cann_version       VARCHAR,
    profiler_level     VARCHAR,
    world_size         INTEGER    -- the job's rank count, where the rank's files state it (Kineto's distributedInfo)
);

CREATE TABLE IF NOT EXISTS kernels (
    rank           INTEGER NOT NULL,
    device_id      INTEGER,
    step           INTEGER,
    name           VARCHAR,
    type           VARCHAR,
    core           VARCHAR,
    start_ns       BIGINT NOT NULL,
    dur_ns         BIGINT NOT NULL,
    wait_ns        BIGINT,
    block_dim      INTEGER,
    stream_id      BIGINT,
    task_id        BIGINT,
    input_shapes   VARCHAR,
    input_dtypes   VARCHAR,
    input_formats  VARCHAR,
    output_shapes  VARCHAR,
    output_dtypes  VARCHAR,
    source         VARCHAR     -- the source kind that produced the row (kernel_details, trace_view, ...)
);

CREATE TABLE IF NOT EXISTS overlap_lanes (
    rank      INTEGER NOT NULL,
    lane      VARCHAR NOT NULL,  -- Computing | Communication | Communication(Not Overlapped) | Free
    start_ns  BIGINT NOT NULL,
    dur_ns    BIGINT NOT NULL
);

CREATE TABLE IF NOT EXISTS host_events (
    rank      INTEGER NOT NULL,
    name      VARCHAR,
    cat       VARCHAR,
    start_ns  BIGINT NOT NULL,
    dur_ns    BIGINT,
    tid       VARCHAR,
    args      JSON
);

CREATE TABLE IF NOT EXISTS flows (
    rank          INTEGER NOT NULL,
    flow_id       VARCHAR,
    cat           VARCHAR,
    host_ts_ns    BIGINT,
    device_ts_ns  BIGINT
);

CREATE TABLE IF NOT EXISTS step_trace (
    rank                               INTEGER NOT NULL,
    device_id                          INTEGER,
    step                               INTEGER,
    computing_us                       DOUBLE,
    comm_not_overlapped_us             DOUBLE,
    overlapped_us                      DOUBLE,
    comm_us                            DOUBLE,
    free_us                            DOUBLE,
    stage_us                           DOUBLE,
    bubble_us                          DOUBLE,
    comm_not_overlapped_excl_recv_us   DOUBLE,
    preparing_us                       DOUBLE,
    source                             VARCHAR   -- file the values were read from
);

-- `group` is an SQL keyword; the column is group_name so console users need no quoting.
CREATE TABLE IF NOT EXISTS comm_ops (
    rank        INTEGER NOT NULL,
    step        INTEGER,
    kind        VARCHAR,          -- collective | p2p
    op_name     VARCHAR,
    group_name  VARCHAR,
    start_us    DECIMAL(20, 3),
    elapse_ms   DOUBLE,
    transit_ms  DOUBLE,
    wait_ms     DOUBLE,
    sync_ms     DOUBLE,
    idle_ms     DOUBLE
);

CREATE TABLE IF NOT EXISTS comm_bandwidth (
    rank             INTEGER NOT NULL,
    step             INTEGER,
    kind             VARCHAR,
    op_name          VARCHAR,
    transport        VARCHAR,
    transit_size_mb  DOUBLE,
    transit_time_ms  DOUBLE,
    bandwidth_gbps   DOUBLE
);

-- src_rank / dst_rank as the file numbers them: within the op's group (op_key's @group), 0 to its
-- size - 1. src_global / dst_global: the job's ranks they are (communication_matrix.GLOBAL), set
-- once every rank is loaded; NULL for a rank not loaded, and the file's numbers in a group nothing
-- tells (no metadata, self link, send or receive).
CREATE TABLE IF NOT EXISTS comm_matrix (
    rank             INTEGER NOT NULL,
    step             INTEGER,
    kind             VARCHAR,
    op_key           VARCHAR,
    op_name          VARCHAR,   -- the op that carried the link's traffic ("Op Name"); NULL in -total
    src_rank         INTEGER,
    dst_rank         INTEGER,
    transport        VARCHAR,
    transit_size_mb  DOUBLE,
    transit_time_ms  DOUBLE,
    bandwidth_gbps   DOUBLE,
    src_global       INTEGER,
    dst_global       INTEGER
);

-- profiler_metadata.json's parallel_group_info, as each rank gave it: a communication group's ranks,
-- local_rank numbering them within it as the comm files do.
CREATE TABLE IF NOT EXISTS comm_groups (
    rank         INTEGER,
    group_name   VARCHAR,   -- as the comm files name it (op@group): a hash of comm_name
    comm_name    VARCHAR,
    label        VARCHAR,   -- the name the job gave the group ("tp"), where it gave one
    local_rank   INTEGER,
    global_rank  INTEGER
);

CREATE TABLE IF NOT EXISTS op_statistic (
    rank       INTEGER NOT NULL,
    op_type    VARCHAR,
    core_type  VARCHAR,
    count      BIGINT,
    total_us   DOUBLE,
    min_us     DOUBLE,
    avg_us     DOUBLE,
    max_us     DOUBLE,
    ratio      DOUBLE
);

-- memory_record.csv: device memory over time, per component (PTA, GE, APP); bytes (the file's MB
-- times 2^20), a NULL where the component does not track the quantity.
CREATE TABLE IF NOT EXISTS memory_record (
    rank          INTEGER NOT NULL,
    device        VARCHAR,          -- as written: NPU:0
    component     VARCHAR,
    ts_ns         BIGINT,
    allocated_bytes  BIGINT,
    reserved_bytes   BIGINT,
    active_bytes     BIGINT,
    stream_ptr    VARCHAR
);

-- operator_memory.csv (or a Kineto trace's [memory] events): each allocation an operator made
-- (profile_memory=True): its size, when it was allocated and released (ns; NULL: still held when
-- the profile ended), how long it was held, and the process's totals (MB) at allocation and at release.
CREATE TABLE IF NOT EXISTS operator_memory (
    rank                  INTEGER NOT NULL,
    device                VARCHAR,
    name                  VARCHAR,
    size_bytes            BIGINT,
    alloc_ns              BIGINT,
    release_ns            BIGINT,
    active_release_ns     BIGINT,
    duration_ns           BIGINT,
    active_duration_ns    BIGINT,
    alloc_allocated_mb    DOUBLE,
    alloc_reserved_mb     DOUBLE,
    alloc_active_mb       DOUBLE,
    release_allocated_mb  DOUBLE,
    release_reserved_mb   DOUBLE,
    release_active_mb     DOUBLE,
    stream_ptr            VARCHAR
);

-- static_op_mem.csv (graph mode): memory each operator of a static graph is given at compile time,
-- between two node indexes (the graph's logical time; NULL end: until the graph's end).
CREATE TABLE IF NOT EXISTS static_op_mem (
    rank         INTEGER NOT NULL,
    device_id    INTEGER,
    op_name      VARCHAR,
    model_name   VARCHAR,
    graph_id     VARCHAR,
    node_start   BIGINT,
    node_end     BIGINT,
    size_bytes   BIGINT
);

-- The device's memory capacity where the profile states it (a Kineto trace's deviceProperties).
CREATE TABLE IF NOT EXISTS device_memory (
    rank         INTEGER NOT NULL,
    device_id    INTEGER,
    name         VARCHAR,
    capacity_mb  DOUBLE,
    source       VARCHAR
);

-- npu_module_mem.csv: memory reserved by each of the device's software modules (SLOG, APP,
-- AICPU, ...) over time, bytes.
CREATE TABLE IF NOT EXISTS npu_module_mem (
    rank         INTEGER NOT NULL,
    device       VARCHAR,
    component    VARCHAR,
    ts_ns        BIGINT,
    reserved_bytes  BIGINT
);

-- operator_details.csv: host-side operators with their device time (not in design.md §4, which
-- lists no home for this file; kept so shapes and call stacks can be joined to kernels).
CREATE TABLE IF NOT EXISTS operators (
    rank             INTEGER NOT NULL,
    name             VARCHAR,
    input_shapes     VARCHAR,
    call_stack       VARCHAR,
    host_self_us     DOUBLE,
    host_total_us    DOUBLE,
    device_self_us   DOUBLE,
    device_total_us  DOUBLE
);

CREATE TABLE IF NOT EXISTS load_log (
    rank          INTEGER,
    file          VARCHAR,
    kind          VARCHAR,
    rows          BIGINT,
    skipped_rows  BIGINT,
    seconds       DOUBLE,
    note          VARCHAR
);

-- The tables each SQLite export held, of those read (sources.sqlite_export.TABLES): one the other
-- ranks' exports hold and a rank's lacks is said, as a missing file is.
CREATE TABLE IF NOT EXISTS db_tables (
    rank  INTEGER,
    db    VARCHAR,  -- the file's name
    name  VARCHAR
);

-- msprof-analyze's cluster outputs (cluster_analysis_output/): job-wide, rank NULL in load_log.
-- cluster_step_trace_time.csv: a row per rank (type 'rank', rank set) and per stage group (type
-- 'stage', ranks: the group as written, e.g. "(0, 1, 2, 3)"), in us as written.
CREATE TABLE IF NOT EXISTS cluster_step_trace (
    step                               INTEGER,
    type                               VARCHAR,
    rank                               INTEGER,
    ranks                              VARCHAR,
    computing_us                       DOUBLE,
    comm_not_overlapped_us             DOUBLE,
    overlapped_us                      DOUBLE,
    comm_us                            DOUBLE,
    free_us                            DOUBLE,
    stage_us                           DOUBLE,
    bubble_us                          DOUBLE,
    comm_not_overlapped_excl_recv_us   DOUBLE,
    preparing_us                       DOUBLE
);

-- cluster_communication.json: per rank group, step and op, every rank's time info (ms).
CREATE TABLE IF NOT EXISTS cluster_comm_ops (
    group_ranks VARCHAR,
    step        INTEGER,
    op_name     VARCHAR,
    group_name  VARCHAR,
    rank        INTEGER,
    start_us    DECIMAL(20, 3),
    elapse_ms   DOUBLE,
    transit_ms  DOUBLE,
    wait_ms     DOUBLE,
    sync_ms     DOUBLE,
    idle_ms     DOUBLE
);

-- cluster_communication_matrix.json: per rank group, step and op key, each src -> dst link.
CREATE TABLE IF NOT EXISTS cluster_comm_matrix (
    group_ranks      VARCHAR,
    step             INTEGER,
    op_key           VARCHAR,
    op_name          VARCHAR,
    src_rank         INTEGER,
    dst_rank         INTEGER,
    transport        VARCHAR,
    transit_size_mb  DOUBLE,
    transit_time_ms  DOUBLE,
    bandwidth_gbps   DOUBLE
);

-- The memory records each rank's memory figures are of: a component (the framework's allocators,
-- memory_record's PTA+GE, else PTA; MindSpore's MindSpore+GE, else MindSpore; else the whole
-- process's APP; else, a CPU-only Kineto trace, the CPU allocator's) and one device ('' where
-- the records name none): a process that used another device too recorded its memory in the same
-- file, and two devices' samples are no one series or peak. Its own device (ranks.device_id)
-- where the records name it, else the one most records name (of as many, the first to record); a
-- record naming no device is its own's. ``others`` and ``other_records``: the devices and records left out.
CREATE OR REPLACE MACRO memory_devices() AS TABLE
WITH best AS (
    SELECT rank, arg_min(component, CASE WHEN component IN ('PTA+GE', 'MindSpore+GE') THEN 0
                                         WHEN component IN ('PTA', 'MindSpore') THEN 1 WHEN component = 'APP' THEN 2
                                         ELSE 3 END) AS component
    FROM memory_record WHERE component IN ('PTA+GE', 'PTA', 'MindSpore+GE', 'MindSpore', 'APP', 'CPU') GROUP BY rank
),
counted AS (
    SELECT m.rank, m.component, m.device, count(*) AS n, min(m.ts_ns) AS first_ns
    FROM memory_record m JOIN best b USING (rank, component) GROUP BY ALL
),
own AS (
    SELECT b.rank, b.component,
           coalesce(first(c.device ORDER BY regexp_extract(c.device, '(\d+)$', 1) = CAST(r.device_id AS VARCHAR) DESC
                                            NULLS LAST, c.n DESC, c.first_ns, c.device), '') AS device
    FROM best b LEFT JOIN counted c ON c.rank = b.rank AND c.component = b.component AND c.device IS NOT NULL
    LEFT JOIN ranks r ON r.rank = b.rank
    GROUP BY ALL
)
SELECT o.rank, o.component, o.device,
       coalesce(list(c.device ORDER BY c.device) FILTER (WHERE c.device <> o.device), []) AS others,
       coalesce(sum(c.n) FILTER (WHERE c.device <> o.device), 0) AS other_records
FROM own o LEFT JOIN counted c USING (rank, component)
GROUP BY ALL;
