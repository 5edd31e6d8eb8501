"""Data health: what a load skipped, why, and what would fix it, from ``load_log``, in words for
people (the Overview's "data health" summary, the report's stderr). Pure: no UI imports."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path, PurePath
from typing import Dict, List, Optional, Pattern, Set, Tuple

from ..text import NOT_WHOLE, gap_words, path_text, rank_list
from .discover import (EARLIER_EXPORT, MAY_BE_PARSING, NO_PARSE_DONE, NOT_A_FOLDER, NOT_SEARCHED, NOTHING_EXPORTED,
                       UNKNOWN_UNREADABLE, kind_by_name, may_be_parsing)
from .errors import LOADER_FAULT
from .sources import KERNEL_SOURCES, source_modules
from .sources.base import FEWER, JOINED_TRACE, KEYS_CUT, MORE, ROWS_LOST, RUN_GAP_S, WALL_CLOCK_NS
from .sources.cluster_communication import OTHER_RUN as CLUSTER_OTHER_OPS
from .sources.communication import NONE_HELD
from .sources.csvfile import JOINED, JOINED_OTHER, MAYBE_CUT
from .sources.kineto import NO_TOTALS, OTHER_SESSION
from .sources.operator_details import MINDSPORES
from .sources.profiler_metadata import KIND as METADATA
from .sources.msprof_timeline import MERGED_PREFIX, SPLIT_PREFIXES
from .sources.sqlite_export import ANALYSIS_DBS, BROKEN_PAGES, CUT_PAGES, KIND as KIND_DB, SKIPPED_ROWS, VIEWERS_TABLES
from .sources.step_trace_time import NOTHING_RAN
from .sources.trace_view import STEPS_FROM_TRACE

ROWS = """
SELECT rank, file, kind, rows, skipped_rows, note FROM load_log
WHERE note <> '' OR skipped_rows > 0
ORDER BY rank NULLS FIRST, file, kind
"""

# Why a file stopped copying or writing half-way, said once for every symptom of it.
NOT_STOPPED = ("the profiler was not stopped cleanly or the copy is incomplete: stop it with "
               "prof.stop() (or leave its with-block) and copy the whole folder again")
CORRUPT = "the file is damaged: copy it again from the machine that wrote it"
# The system's refusals of the moment (its limits, a failing disk or network mount): the file may
# be whole, and reads when they pass.
SYSTEM_LIMITS = (r"Too many open files|Input/output error|Stale file handle|Resource temporarily unavailable|"
                 r"Cannot allocate memory|Interrupted system call")

# A db export that lost tables, or columns its rows need, or the rows of a table others point into
# (sources.sqlite_export): their rows are gone; of the tables of its device tasks, its kernels.
TABLES_MISSING = r"(^|; )(tables|columns) (missing|empty)"
TASKS_LOST = re.compile(TABLES_MISSING + r": [^;]*\b(TASK|STRING_IDS|COMPUTE_TASK_INFO|COMMUNICATION_OP)\b")

# (note pattern, what happened, fix); first match wins. {name} is the file, {lost} the rows lost.
CAUSES: Tuple[Tuple[Pattern, str, str], ...] = tuple((re.compile(p), what, fix) for p, what, fix in (
    (r"^not exported", "{folder}: {note}", ""),
    (r"^not split by device", "{name}: {note}", "the kernels come from op_summary; the steps and "
     "overlap need each device's timeline on its own"),
    (r"^loaded as one rank: a db export", "{folder}: {note}", "export the run as text too (msprof --export=on "
     "--type=text): its op_summary says each row's device"),
    (r"^loaded as one rank: a trace of the steps", "{name}: {note}", "open each process's own trace (the "
     "profiler writes one a process) side by side, in one folder"),
    (r"^loaded as one rank", "{folder}: {note}", "re-export with a newer msprof, whose op_summary says "
     "each row's device"),
    ("^" + re.escape(NOTHING_EXPORTED), "{folder}: {note}", "copy the device folder again with its timeline/ "
     "and summary/ (or its data/, then export it: msprof --export=on)"),
    (r"^parse in progress", "{name}: {note} (left out)", "open it again when the parse has finished"),
    (r"^" + re.escape(MAY_BE_PARSING), "{folder}: {note}", "open it again once the profiler's parse has finished "
     "(it writes ASCEND_PROFILER_OUTPUT/analyse.done last); `npu-tui report --partial` reports what is there now"),
    (r"^" + re.escape(NO_PARSE_DONE), "{folder}: {note}", "if its parse stopped part way, run "
     "torch_npu.profiler.profiler.analyse on the folder again"),
    (r"^folder cannot be read", "{folder}/ cannot be read ({note_head}): left out",
     "make it readable (chmod a+rx on the folder), or open the folders you can read one at a time"),
    (r"^folder not searched", "{folder}/ was not searched: {note_head}", "if it holds profiler output, make "
     "it readable (chmod a+rx on the folder)"),
    # (what it holds, not who may read it: the profiler writes it as it stops)
    (r"^profiler_info cannot be read: (empty|not valid JSON|not a JSON object)", "{name} cannot be read: {note_head}",
     NOT_STOPPED),
    (r"^profiler_info cannot be read", "{name} cannot be read: {note_head}",
     "make it readable (chmod a+r on the file), or copy it again from the machine that wrote it"),
    (r"not loaded for its splits", "{name}: {note}", NOT_STOPPED),
    ("^" + re.escape(CUT_PAGES), "{name} was {note}", NOT_STOPPED),
    (r"cut short", "{name} was cut short{zeros}: what followed the cut is missing, how much the file cannot "
                   "tell; {lost} skipped", NOT_STOPPED),
    (re.escape(MAYBE_CUT), "{name}: {note}; if it was cut, what followed is missing", NOT_STOPPED + "; if the "
     "file is whole (written without its last line break), that row is all that is left out "
     "(npu-tui report --partial)"),
    (r"zero bytes inside it", "{name}: {note}", CORRUPT),
    (re.escape(BROKEN_PAGES), "{name}: {note}", CORRUPT),
    (re.escape(JOINED) + "|" + re.escape(JOINED_OTHER), "{name}: {note}", "split the file where a header comes "
     "again, and open each part with the other files of its own run"),
    (re.escape(JOINED_TRACE), "{name}: {note}", "split the file where the second trace begins, and open "
     "each as a trace of its own"),
    (re.escape(LOADER_FAULT), "{name}: {note}", "report it with the file; the other files loaded"),
    (re.escape(ROWS_LOST), "{name} {note}", "the machine stopped before the file reached its disk: "
     "profile the run again (its other files may have lost their ends too)"),
    (r"^ends in [\d,]+ zero bytes", "{name} {note}; what precedes them is whole, and loaded",
     "the run may have ended in the same crash: check its other files"),
    (r"^only zero bytes", "{name} holds {note}", "the profiler or its machine stopped before writing "
     "it: profile the run again, or copy the folder again if the copy was made meanwhile"),
    (r"^file ends after a complete event", "{name}: {note}", NOT_STOPPED),
    ("^" + re.escape(KEYS_CUT), "{name}: {note}", NOT_STOPPED),
    (r"^gzip stream damaged", "{name}: {note}", CORRUPT),
    (r"^not a file", "{folder} is {note_head}, not a file: left out", "put the profiler's file back "
     "in its place: copy it again, or point the link at a file that exists"),
    (SYSTEM_LIMITS, "{name} could not be read: the system refused for now ({note_head})", "open it again; "
     "for too many open files, raise the limit (ulimit -n) or open the job's rank folders a few at a time; "
     "for an I/O error or a stale handle, check the disk or the network mount it is on"),
    (re.escape(UNKNOWN_UNREADABLE), "{name} {note}: left out", "make it readable (chmod a+r on the file), "
     "or move it out of the profile's folder if it is none of the profiler's"),
    (re.escape(NOT_A_FOLDER), "{name} is {note}: what it holds is left out", "if it is an archive (`file` says "
     "which), extract it in its place; else copy the folder again from where the profiler wrote it"),
    (r"^folder gone", "{folder}/ is {note_head}: left out", "mount or copy again the folder the link points "
     "to, or remove the link"),
    (r"^another profile beside", "{name}: {note}, not loaded", "open it on its own, or move it out "
     "of this folder"),
    (r"^msprof-analyze's outputs of one node", "{folder}: {note}", "run msprof-analyze cluster on the folder "
     "opened, for the whole job's"),
    (r"^a rank folder below the others", "{folder}: {note}", "if it is a rank of this job, move it beside "
     "the others; if another run's, open it on its own"),
    (r"^profiler files in a folder below the others", "{folder}: {note}", "if they are ranks of this job, "
     "move them beside the others; if another run's, open that folder on its own"),
    (r"^not a distributed run \(rank_id", "{folder}: {note}", "open each run's folder on its own; its "
     "cross-rank figures compare separate runs"),
    (r"^not a distributed run", "{name}: {note}", "open each trace on its own; the cross-rank figures "
     "compare separate runs"),
    (r"^a compressed copy of", "{name}: {note}", "if it is another run, not a copy, move it to a folder "
     "of its own and open that"),
    (r"^a copy of", "{name}: {note}", ""),
    (r"^a second", "{name}: {note}", "if it is another run's, move it to a folder of its own and open that"),
    (r"^no profiler_info", "{name}: no profiler_info.json; numbered as the first rank no other folder claims, "
     "its own number unknown", NOT_STOPPED),
    (r"claimed twice", "{folder}: {note}", "two rank folders carry the same profiler_info_N.json, or two "
     "workers' traces the same rank (a copied folder, or two runs side by side): remove the "
     "duplicate, or open each run's folders on their own"),
    (r"^empty file", "{name} is empty", "the profiler was killed before writing it, or the copy is "
     "incomplete: copy the folder again"),
    (r"^header only", "{name} has a header and no rows", "the profiled steps ran no device work: "
     "check that the profiler schedule (wait / warmup / active) covers real steps"),
    (r"^no events", "{name} holds no events", NOT_STOPPED),
    ("^" + re.escape(NONE_HELD), "{name}: {note}", "if the rank ran collectives or sends in its profiled steps, "
     "profile them again with ProfilerActivity.NPU: torch_npu writes each op it records here"),
    (r"not UTF-8", "{name} holds text that is not UTF-8 ({note_head})", "re-export it, or save it as UTF-8"),
    (r"written in UTF-16", "{name} is {note_head}, not UTF-8", "save it as UTF-8, or copy the profiler's own "
     "file again"),
    (r"Permission denied", "{name} cannot be read (permission denied)", "make it readable: "
     "chmod a+r on the file"),
    (r"No such file|Not a directory", "{name} went away while loading", "the folder changed while "
     "it was read: reload once the job has finished writing it"),
    (r"db export of the same run", "{name} not loaded: the text export of the same run is used", ""),
    (r"db export beside files", "{name} not loaded: the text export beside it is used", ""),
    (r"db export of another run", "{name}: {note}", "move one of the two exports to a folder of its own, "
     "and open each on its own"),
    (re.escape(CLUSTER_OTHER_OPS), "{name}: {note}", "run msprof-analyze cluster again on this folder, or move "
     "the other run's cluster_analysis_output out of it"),
    (r"^a split of ", "{name}: {note}", ""),
    (r"kernels? " + re.escape(FEWER), "{name}: {note}", "copy the kernel file again from where the "
     "profiler wrote it; a copy cut at a line end reads as whole"),
    (r"kernels? " + re.escape(MORE), "{name}: {note}", "copy the kernel file again from where the "
     "profiler wrote it: the rows added to it count among the rank's kernels as it is"),
    (r"empty profiling cycle", "{name}: an empty profiling cycle (the schedule's last), skipped", ""),
    (r"No usable temporary directory|No space left|File too large", "{name} could not be loaded: no room to "
     "write a temporary copy ({note_head})", "free space in the temporary folder (TMPDIR) or the "
     "cache folder (NPU_TUI_CACHE_DIR), and open it again"),
    (r"^out of memory", "{name} did not fit in memory ({note})", "free memory on this machine, or "
     "open the job's rank folders a few at a time"),
    (TABLES_MISSING, "{name}: {note}", CORRUPT),
    (re.escape(SKIPPED_ROWS), "{name}: {note}", "copy it again from the machine that wrote it: the profiler "
     "writes every row with its times and names"),
    (r"delimited by", "{name} could not be read: {note_head}", "save it with commas between the cells, or "
     "copy the profiler's own file again"),
    (re.escape(NO_TOTALS), "{name}: {note}", "profile with a newer torch, whose [memory] events give the totals"),
    (re.escape(MINDSPORES), "{name}: {note}", ""),
    # (a file that lost a few events and kept the rest, or text among them and no event, was read)
    (r"the rest kept|every event kept", "{name}: {note}", CORRUPT),
    (r"malformed|unreadable|not a |without", "{name} could not be read: {note}", CORRUPT),
))
# Notes of a file that stops before its end (chrome_trace.stage_trace's): cut, or its gzip damaged.
STOPPED_EARLY = r"cut short|^file ends after a complete event|^gzip stream damaged|^" + re.escape(KEYS_CUT)
# Zero bytes that end a file, where its writer stopped (sources.base.zeros_note).
ZEROS = re.compile(r"ends in ([\d,]+) zero bytes")
# Kernels another file counts or runs that the kernel file lacks (sources.op_statistic,
# sources.trace_view): rows lost from it, weighed as such, though no row of the file that says so
# was skipped; or holds more of (rows twice, nothing lost, its figures wrong all the same).
KERNELS_OFF = re.compile(r"holds ([\d,]+) kernels? (" + re.escape(FEWER) + "|" + re.escape(MORE) + ")")
# A rank folder the profiler is still writing, or one that cannot be read, or an entry under a
# profiler file's name that is not a file: left out, so the run is incomplete.
LEFT_OUT = re.compile(r"^parse in progress|^folder cannot be read|^not a file|^folder gone|^not exported|"
                      r"^not split by device|^" + re.escape(UNKNOWN_UNREADABLE) + "|^" + re.escape(NOT_A_FOLDER))
# A file that loaded in part, how much of it lost unknown (cut short, or maybe: a last row that may be
# cut is all a file cut in half shows; a Kineto trace loses its
# device's tasks first, written after the CPU ops; a rank's tail of steps passes for its whole and
# is compared with the others; a CSV with a block of zeros inside, or ending in them), or its kernels lost: as good
# as one that gave nothing. (So is a kernel file another file shows rows short of, or over: KERNELS_OFF.)
UNKNOWN_LOSS = re.compile(STOPPED_EARLY + "|" + TABLES_MISSING + r"|zero bytes inside it|" + re.escape(ROWS_LOST)
                          + "|" + re.escape(BROKEN_PAGES) + "|" + re.escape(MAYBE_CUT))
# A CSV holding a second table after its own (sources.csvfile), a trace a second trace
# (sources.chrome_trace): that one is not loaded.
NOT_READ_ON = re.compile("|".join(map(re.escape, (JOINED, JOINED_OTHER, JOINED_TRACE))))
# Failures whose cause passes while the files, and so the cache's key, stay as they are: a load
# with one is not cached, or the failure would outlive its fix. (A damaged file is fixed by a new
# copy, a new key; a loader's own fault, whatever caused it, is not kept either.)
PASSING = re.compile(r"Permission denied|^parse in progress|^" + re.escape(MAY_BE_PARSING) + "|"
                     r"^folder cannot be read|^not a file|^folder gone|No such file|No usable temporary directory|"
                     r"No space left|File too large|"
                     r"Not a directory|^out of memory|could not be stored|" + SYSTEM_LIMITS + "|"
                     + re.escape(LOADER_FAULT))
# Notes of files left out by design: nothing is missing.
# (A split in place of its merged file that failed: that file's error names it.)
BY_DESIGN = re.compile(r"empty profiling cycle|db export of the same run|db export beside files|^a split of |"
                       r"^" + re.escape(EARLIER_EXPORT) + "|^" + re.escape(STEPS_FROM_TRACE) + "|"
                       r"^a copy of|^in place of .*, which gave nothing$|" + re.escape(MINDSPORES))
# Files left out for others beside them that loaded: the run is whole, but not all that is there.
LEFT_BESIDE = re.compile(r"^db export of another run|" + re.escape(CLUSTER_OTHER_OPS) + "|^"
                         + re.escape(OTHER_SESSION))
# A time with an exponent counts as none: it is a spreadsheet's rounding (1.73641E+15 for a start).
WHY_SKIPPED = "ragged, cut or hand-edited rows, cells that are not numbers, or times written with an exponent"
NEVER = "its rows are never ragged, nor its times written with an exponent"
# The JSON files of communication ops and links: an op or link is skipped for its figures.
JSON_KINDS = ("communication", "communication_matrix", "cluster_communication", "cluster_communication_matrix")
WHY_SKIPPED_JSON = ("ops or links with a figure missing, or one that is no number (text, null, true, NaN) or negative, "
                    "or given twice")
NEVER_JSON = "it writes every figure as a number"
SKIPPED_ONLY = ("{name}: {lost} skipped ({why})", "compare with the file the profiler wrote: {never}")
EVERY_ROW = "{name}: every one of its {lost} skipped ({why})"


SEVERITY_ORDER = {"error": 0, "warning": 1}


@dataclass(frozen=True)
class HealthItem:
    severity: str        # "error": the file gave nothing (or lost an unknown part); "warning": some rows lost; "info": by design
    rank: Optional[int]  # None for problems of the whole profile (discovery)
    file: str            # the file or folder concerned, as logged
    what: str            # what was skipped and why, one line
    fix: str             # what would fix it; "" when nothing needs fixing
    lost: int            # rows or events skipped

    def line(self) -> str:
        where = f"rank {self.rank}: " if self.rank is not None else ""
        return where + self.what + (f" ({self.fix})" if self.fix else "")


# Ranks the communication data links to that were not loaded: the job had more ranks. The job's
# ranks where told (comm_matrix's src_global / dst_global), and how many more a group's links number
# that no loaded rank is (within the group: which of the job's they are is not told; as many as in
# the group with most, at least). A loaded rank without comm data of its own may be one of a
# group's untold numbers; one whose data leaves the group out is not in it.
PEERS = """
WITH m AS (SELECT * FROM comm_matrix WHERE NOT list_contains($other_run::INTEGER[], rank)),
loaded AS (SELECT rank FROM ranks WHERE NOT list_contains($other_run::INTEGER[], rank)),
untold AS (
    SELECT op_group(op_key) AS grp, count(DISTINCT n) AS n
    FROM (SELECT op_key, src_rank AS n FROM m WHERE src_global IS NULL
          UNION ALL SELECT op_key, dst_rank FROM m WHERE dst_global IS NULL)
    WHERE n IS NOT NULL GROUP BY grp
),
silent AS (SELECT count(*) AS n FROM loaded WHERE rank NOT IN (SELECT rank FROM m))
SELECT (SELECT list(DISTINCT r ORDER BY r) FROM (SELECT src_global AS r FROM m UNION ALL SELECT dst_global FROM m)
        WHERE r IS NOT NULL AND r NOT IN (SELECT rank FROM loaded)),
       (SELECT count(*) FROM loaded),
       (SELECT coalesce(max(greatest(u.n - s.n, 0)), 0) FROM untold u, silent s)
"""
UNTOLD_PEERS = ("a rank not loaded is known only by its number within a communication group, not as the job's "
                "rank: its own files, or the loaded ranks' profiler_metadata.json, would tell; ")
PARTIAL_FIX = ("copy every rank's folder of the job beside these to see the whole cluster; until "
               "then the cross-rank figures (slow rank, spreads) cover the loaded ranks only")
PARTIAL_CLUSTER_FIX = ("copy every rank's folder of the job beside these to see the whole cluster; until then the "
                       "cross-rank figures (slow rank, spreads) cover the loaded ranks and, by msprof-analyze's "
                       "cluster step trace, the step times of {ranks}")


CLUSTER_ONLY_FIX = "open the job's folder, with every rank's *_ascend_pt folder beside cluster_analysis_output"

# A kind of file some ranks of a format have and a rank of that format does not: a rank copied in
# part (or whose profiler stopped early). Its figures that need that file are missing, and the
# rank drops out of what compares the ranks, without a file having failed.
MISSING_FILES = """
-- A db export's analysis db (analysis.db: steps, communication) is a file of its own beside the
-- profiler db, read by the same loader: missing, it is missed apart. profiler_metadata.json's
-- groups are the job's: the other ranks' tell them as well.
WITH have AS (SELECT DISTINCT l.rank, l.kind, l.file, r.source_format,
                     CASE WHEN l.kind = 'sqlite_export' AND list_contains($analysis, parse_filename(l.file))
                          THEN 'analysis' ELSE l.kind END AS part
              FROM load_log l JOIN ranks r USING (rank)
              WHERE l.kind NOT IN ('discovery', 'ignored', $metadata)
                    AND NOT list_contains($other_run::INTEGER[], l.rank)),
-- Named as the ranks name it where they all do; else (a name with a time or a rank in it) by its kind.
kinds AS (SELECT source_format, kind, part, count(DISTINCT rank) AS ranks,
                 CASE WHEN count(DISTINCT parse_filename(file)) = 1
                      THEN any_value(parse_filename(file)) ELSE kind || ' file' END AS name
          FROM have GROUP BY source_format, kind, part)
SELECT r.rank, r.path, k.kind, k.name, k.ranks FROM ranks r JOIN kinds k USING (source_format)
WHERE NOT EXISTS (SELECT 1 FROM have h WHERE h.rank = r.rank AND h.part = k.part) AND NOT list_contains($other_run::INTEGER[], r.rank)
ORDER BY r.rank, k.part
"""
MISSING_FILE_FIX = "copy the rank's {name} too, from where the profiler wrote it"

# The same of a db export's tables (db_tables): one the other ranks' exports hold, this rank's lacks.
MISSING_TABLES = """
WITH have AS (SELECT DISTINCT t.rank, t.db, t.name, list_contains($analysis, t.db) AS part
              FROM db_tables t JOIN ranks r USING (rank)
              WHERE r.source_format = 'db' AND NOT list_contains($other_run::INTEGER[], t.rank)
                    AND NOT list_contains($viewers, t.name)),
dbs AS (SELECT DISTINCT rank, db, part FROM have),
names AS (SELECT part, name, count(DISTINCT rank) AS ranks FROM have GROUP BY ALL)
SELECT d.rank, (SELECT min(file) FROM load_log l WHERE l.rank = d.rank AND parse_filename(l.file) = d.db),
       d.db, n.name, n.ranks
FROM dbs d JOIN names n ON n.part IS NOT DISTINCT FROM d.part
WHERE NOT EXISTS (SELECT 1 FROM have h WHERE h.rank = d.rank AND h.db = d.db AND h.name = n.name)
ORDER BY d.rank, d.db, n.name
"""
# A rank whose kernels carry no step where its step trace gives several (a kernel file re-exported
# without its Step Id column): its kernels' figures are the whole profile's, as one step.
STEPLESS = """
SELECT k.rank, (SELECT min(l.file) FROM load_log l WHERE l.rank = k.rank AND l.rows > 0
                AND list_contains($kernel_sources, l.kind)), count(DISTINCT s.step)
FROM (SELECT rank FROM kernels GROUP BY rank HAVING bool_and(step IS NULL)) k
JOIN step_trace s ON s.rank = k.rank AND s.step IS NOT NULL
GROUP BY k.rank HAVING count(DISTINCT s.step) > 1
"""
STEPLESS_FIX = ("export it again from the profiler's raw data (with a schedule, torch_npu numbers each kernel's "
                "step); the step trace's own figures are per step")
# A rank whose memory records name several devices (a process that used another device too):
# its memory figures are one device's (memory_devices()), the others' records left out.
OTHER_DEVICES = """
SELECT d.rank, (SELECT min(l.file) FROM load_log l WHERE l.rank = d.rank AND l.rows > 0
                AND l.kind IN ('memory_record', 'kineto', 'sqlite_export')),
       d.device, d.others, d.other_records
FROM memory_devices() d WHERE len(d.others) > 0 ORDER BY d.rank
"""
OTHER_DEVICES_FIX = ("the other devices' memory is in the memory_record table (npu-tui sql PATH \"SELECT * FROM "
                     "memory_record WHERE device = '...'\"); profile each device's work in a process of its own "
                     "to see it as a rank")
# msprof's older layout writes each iteration's timeline files apart ({kind}_{device}_{model}_{iteration}
# .json): an iteration none of whose files is there, between two that are, lost its steps.
MISSING_ITERATIONS = """
WITH it AS (SELECT DISTINCT rank, file, CAST(m.model AS INTEGER) AS model, CAST(m.iteration AS INTEGER) AS iteration
            FROM (SELECT rank, file, regexp_extract(parse_filename(file), $pattern, ['model', 'iteration']) AS m
                  FROM load_log WHERE rank IS NOT NULL AND regexp_matches(parse_filename(file), $pattern))),
span AS (SELECT rank, model, min(file) AS file, min(iteration) AS lo, max(iteration) AS hi,
                list(DISTINCT iteration) AS have
         FROM it GROUP BY ALL)
SELECT rank, file, lo, hi, list_filter(range(lo, hi + 1), lambda i: NOT list_contains(have, i))
FROM span WHERE hi - lo + 1 > len(have)
ORDER BY rank, model
"""
ITERATION_FILES = ("^(?:" + "|".join(re.escape(p) for p in (MERGED_PREFIX, *SPLIT_PREFIXES))
                   + r")\d+_(\d+)_(\d+)(?:_\d{8,})?\.json$")  # (msprof 6.3 and later add the export's time)
MISSING_ITERATION_FIX = "copy the device's timeline folder again, with every iteration's files"
# The world sizes the ranks' files state (Kineto's distributedInfo), with the ranks that state each.
WORLD_SIZES = """
SELECT world_size, list(rank ORDER BY rank) FROM ranks
WHERE world_size IS NOT NULL AND NOT list_contains($other_run::INTEGER[], rank)
GROUP BY world_size ORDER BY world_size
"""
WORLD_SIZES_FIX = ("open each job's files on their own; the cross-rank figures compare the ranks loaded here as "
                   "one job's")
MISSING_TABLE_FIX = "copy the rank's {db} again from where the profiler wrote it; if it is the same there, export it again"
MISSING_FILE_PARSING = ("if its parse is still running (its raw PROF_* data is there, no analyse.done), open it "
                        "again once the parse has finished; else ")

# A cluster step trace row for a rank loaded here, whose own step_trace_time (or analysis.db) has
# no such step or other figures. Its figures are copies, as written: only their rounding differs.
# (Computing: Stage is MindSpore's HCCL span, which its ranks' step_trace does not keep)
CLUSTER_MISMATCH = """
WITH own AS (SELECT s.rank, s.step, s.computing_us FROM step_trace s JOIN ranks r USING (rank)
             WHERE r.source_format IN ('torch_npu', 'db') AND NOT list_contains($other_run::INTEGER[], s.rank)),
theirs AS (SELECT rank, step, computing_us FROM cluster_step_trace
           WHERE type = 'rank' AND rank IN (SELECT rank FROM own))
SELECT (SELECT min(file) FROM load_log WHERE kind IN ('cluster_step_trace', 'cluster_db')), t.rank, t.step,
       t.computing_us, o.computing_us, count(*) OVER ()
FROM theirs t LEFT JOIN own o ON o.rank = t.rank AND o.step IS NOT DISTINCT FROM t.step
WHERE o.rank IS NULL OR abs(t.computing_us - o.computing_us) > $same * greatest(abs(o.computing_us), 1)
ORDER BY t.rank, t.step NULLS FIRST
LIMIT 1
"""
CLUSTER_SAME = 1e-4
CLUSTER_OTHER_RUN = "does not match the ranks loaded"
# The ranks the cluster step trace gives that are not loaded: it stands in for their own files (not
# beside msprof's ranks, whose numbers are not msprof-analyze's: as step_breakdown's stand-ins), and
# whether its steps of each are among the loaded ranks' (msprof-analyze sums an msprof rank over the
# whole profile in a row without a step, no mean per step to set beside theirs); with its file.
STAND_INS = """
WITH theirs AS (
    SELECT rank, list(DISTINCT coalesce(step, -1)) AS steps FROM cluster_step_trace
    WHERE type = 'rank' AND rank IS NOT NULL AND NOT list_contains($loaded::INTEGER[], rank)
      AND NOT EXISTS (SELECT 1 FROM ranks WHERE source_format = 'msprof')
    GROUP BY rank
),
ours AS (SELECT list(DISTINCT coalesce(step, -1)) AS steps FROM step_trace
         WHERE list_contains($loaded::INTEGER[], rank) AND NOT list_contains($other_run::INTEGER[], rank))
SELECT t.rank, len($loaded::INTEGER[]) = 0 OR list_has_all(coalesce(o.steps, []), t.steps),
       (SELECT min(file) FROM load_log WHERE kind IN ('cluster_step_trace', 'cluster_db'))
FROM theirs t, ours o ORDER BY t.rank
"""
OTHER_STEPS = ("{name} gives {ranks}, not loaded, other steps than the loaded ranks' (a row without a step sums "
               "the whole profile): not compared with them")
OTHER_STEPS_FIX = "copy their rank folders beside these, to compare them step by step"
CLUSTER_MISMATCH_FIX = ("run msprof-analyze cluster again on this folder, or move the old cluster_analysis_output "
                        "out of it")

STOPPED = ("{name}: not loaded, its load was stopped: the rank's host events, flows and overlap lanes "
           "are missing, so its stages come from kernel signatures")
STOPPED_FIX = "r loads the profile again"

# What a trace holds besides kernels, by kind.
TRACES = {"trace_view": "host events, flows and overlap lanes", "kineto": "host events, flows and memory records",
          "msprof_timeline": "host events and overlap lanes"}

# Ranks that loaded without a single kernel: none of their files holds device tasks.
NO_KERNELS = """
SELECT rank, path, source_format,
       source_format = 'kineto' AND EXISTS (SELECT 1 FROM load_log l WHERE l.rank = ranks.rank
                                             AND regexp_matches(l.note, $stopped_early)) AS cut
FROM ranks
WHERE NOT EXISTS (SELECT 1 FROM kernels k WHERE k.rank = ranks.rank)
ORDER BY rank
"""
# A Kineto trace cut (or its gzip damaged) before its device events, written after the CPU ops.
NO_KERNELS_CUT = ("no kernels: its trace was cut before the device's tasks, which the profiler writes after "
                  "the CPU ops; its figures are empty")
NO_KERNELS_FIX = {
    "kineto": "profile with ProfilerActivity.CUDA (or the device's activity) as well as the CPU",
    "msprof": "copy the folder's op_summary_*.csv or msprof_*.json too",
    "db": "its db export holds no device tasks (no TASK table): profile with ProfilerActivity.NPU "
          "as well, or copy the rank's kernel_details.csv (ASCEND_PROFILER_OUTPUT) too",
}
NO_KERNELS_FIX_NPU = "copy the rank's kernel_details.csv or trace_view.json (ASCEND_PROFILER_OUTPUT) too"

# The files that gave each rank's kernels, and whether they gave any kernel's shapes.
KERNEL_FILES = """
SELECT DISTINCT l.rank, l.file, l.kind, k.shapes, l.note
FROM (SELECT rank, source, bool_or(input_shapes IS NOT NULL) AS shapes FROM kernels GROUP BY ALL) k
JOIN load_log l ON l.rank = k.rank AND l.kind = k.source AND l.rows > 0
ORDER BY l.file
"""


def health(profile) -> List[HealthItem]:
    """One item per load_log row that skipped something or carries a note, one per rank that
    holds no kernel, and one for the job's ranks the communication data names but the profile
    does not hold; errors first, each severity's profile-wide items before the ranks'."""
    # The tables name files whole; said as this open names the profile.
    rows = [(rank, profile.named(file), *rest) for rank, file, *rest in profile.con.execute(ROWS).fetchall()]
    items = [_item(*row) for row in rows]
    # A rank whose kernel file failed, giving nothing: that failure says it has no kernels
    # already. Another file's failure, say communication.json's, does not; nor does a kernel file
    # that loaded in part (cut short), whose part may hold none.
    gave_nothing = [i.severity == "error" and kind in KERNEL_SOURCES and not n
                    for i, (_, _, kind, n, *_) in zip(items, rows)]
    failed_ranks = {i.rank for i, nothing in zip(items, gave_nothing) if nothing}
    # Where another of the rank's files gave its kernels instead, the failure costs what that
    # file lacks, not the kernels: said, or "could not be loaded" reads as a rank without them.
    if failed_ranks:
        kernel_files = [(rank, profile.named(file), kind, shapes, note)
                        for rank, file, kind, shapes, note in profile.con.execute(KERNEL_FILES).fetchall()]
        items = [_stand_in(i, kind, kernel_files) if nothing else i
                 for i, nothing, (_, _, kind, *_) in zip(items, gave_nothing, rows)]
    where = path_text(profile.path)
    if not profile.ranks:
        items.insert(0, HealthItem(
            "warning", None, where,
            "only msprof-analyze's cluster outputs here, no rank's own files: communication, links and "
            "each rank's step times as it summed them; of the findings only those across ranks (the others need "
            "each rank's kernels)", CLUSTER_ONLY_FIX, 0))
    no_kernels = profile.con.execute(NO_KERNELS, {"stopped_early": STOPPED_EARLY}).fetchall()
    # (a db export whose task tables are damaged says so: not that the run lacks the device's tasks)
    tables_lost = {rank for rank, _, kind, _, _, note in rows if kind == KIND_DB and TASKS_LOST.search(note)}
    for rank, path, fmt, cut in no_kernels:
        if rank in failed_ranks | tables_lost:
            continue
        if cut:
            items.append(HealthItem("warning", rank, profile.named(path), NO_KERNELS_CUT, NOT_STOPPED, 0))
        else:
            items.append(HealthItem("warning", rank, profile.named(path), "no kernels: none of its files holds "
                                    "the device's tasks; its figures are empty",
                                    NO_KERNELS_FIX.get(fmt, NO_KERNELS_FIX_NPU), 0))
    said = failed_ranks | {r for r, *_ in no_kernels}  # no kernels: said already
    # Left for the background load, or left out by discovery (which said why), not missing (a
    # rank whose kernels failed reads its trace at once).
    deferred = {(job.ctx.rank, module.KIND) for job in profile.pending for module, _ in job.files}
    left_out = {(rank, kind_by_name(PurePath(file).name, source_modules()))
                for rank, file, kind, *_ in rows if kind == "discovery" and rank is not None}
    # Ranks of another run lack what this run's have, and have what they lack: neither is said,
    # and they count in no figure of this run's ranks.
    runs = [] if any(NOT_DISTRIBUTED in i.what for i in items) else _other_runs(profile)
    items += runs
    other_run = {"other_run": sorted({i.rank for i in runs})}
    analysis = {"analysis": list(ANALYSIS_DBS)}
    for rank, path, kind, name, having in profile.con.execute(
            MISSING_FILES, {**other_run, **analysis, "metadata": METADATA}).fetchall():
        if (kind in KERNEL_SOURCES and rank in said) or (rank, kind) in deferred | left_out:
            continue
        folder, fix = profile.named(path), MISSING_FILE_FIX.format(name=name)
        items.append(HealthItem("warning", rank, folder, f"no {name}, which {_count(having, 'other rank')} "
                                f"{'has' if having == 1 else 'have'}: its figures that need it are missing",
                                MISSING_FILE_PARSING + fix if may_be_parsing(Path(folder)) else fix, 0))
    for rank, file, db, name, having in profile.con.execute(
            MISSING_TABLES, {**other_run, **analysis, "viewers": sorted(VIEWERS_TABLES)}).fetchall():
        exports = "the export of 1 other rank does" if having == 1 else f"the exports of {having} other ranks do"
        items.append(HealthItem("warning", rank, profile.named(file), f"{db} holds no {name} table; {exports}: "
                                "its figures that need it are missing", MISSING_TABLE_FIX.format(db=db), 0))
    for rank, file, lo, hi, gone in profile.con.execute(MISSING_ITERATIONS, {"pattern": ITERATION_FILES}).fetchall():
        items.append(HealthItem("warning", rank, profile.named(str(PurePath(file).parent)),
                                f"no timeline files of {rank_list(gone, 'iteration')}, between iterations {lo} and "
                                f"{hi}: {'its' if len(gone) == 1 else 'their'} steps are missing",
                                MISSING_ITERATION_FIX, 0))
    for rank, file, steps in profile.con.execute(STEPLESS, {"kernel_sources": list(KERNEL_SOURCES)}).fetchall():
        items.append(HealthItem("warning", rank, profile.named(file), f"{PurePath(file).name} gives its kernels no "
                                f"step, where its step trace gives {steps}: the figures of its kernels (the step "
                                "account, the findings per step) are the whole profile's, as one step",
                                STEPLESS_FIX, 0))
    for rank, file, device, others, records in profile.con.execute(OTHER_DEVICES).fetchall():
        names = " and ".join(others)
        items.append(HealthItem("warning", rank, profile.named(file) if file else "",
                                f"{PurePath(file).name if file else 'the memory records'} also record"
                                f"{'s' if file else ''} the memory of {names} ({records:,} records), beside its own "
                                f"device's ({device}): the rank's memory figures are {device}'s, {names}'s left out",
                                OTHER_DEVICES_FIX, 0))
    if profile.stopped:  # the background load was stopped: its files are not in, and wait
        items += [HealthItem("warning", job.ctx.rank, path_text(path), STOPPED.format(name=path_text(path.name)),
                             STOPPED_FIX, 0) for job in profile.pending for _, path in job.files]
    missing, loaded, untold = profile.con.execute(PEERS, other_run).fetchone()
    mismatch = _cluster_mismatch(profile, other_run)
    fitting, other_steps, cluster_file = ([], [], None) if mismatch or not profile.ranks else \
        _stand_ins(profile, other_run["other_run"])
    partial_fix = PARTIAL_CLUSTER_FIX.format(ranks=rank_list(fitting)) if fitting else PARTIAL_FIX
    if other_steps:
        items.append(HealthItem("warning", None, profile.named(cluster_file), OTHER_STEPS.format(
            name=PurePath(cluster_file).name, ranks=rank_list(other_steps)), OTHER_STEPS_FIX, 0))
    missing = missing or []
    world, held = profile.con.execute(
        "SELECT max(world_size), count(*) FROM ranks WHERE NOT list_contains($other_run::INTEGER[], rank)",
        other_run).fetchone()
    if missing or untold:
        told = [rank_list(missing)] if missing else []
        if untold:
            told.append(f"at least {_count(untold, 'more rank' if missing else 'rank')}")
        more = max(len(missing), untold)
        items.append(HealthItem(
            "warning", None, where,
            f"partial rank set: the communication data links to {' and '.join(told)}, not loaded"
            f"{' from this run' if runs else ''} ({loaded} of {'at least ' if untold else ''}{loaded + more} "
            "ranks loaded)", (UNTOLD_PEERS if untold else "") + partial_fix, 0))
    elif world and world > held:
        items.append(HealthItem(
            "warning", None, where,
            f"partial rank set: the traces give the job {world} ranks (its world size); "
            f"{held} of them here", partial_fix, 0))  # (here: one whose files failed is said above)
    sizes = profile.con.execute(WORLD_SIZES, other_run).fetchall()
    if len(sizes) > 1:
        said = "; ".join(f"{rank_list(ranks)} {'says' if len(ranks) == 1 else 'say'} {size}" for size, ranks in sizes)
        items.append(HealthItem("warning", None, where, f"the ranks disagree on the job's world size ({said}): "
                                "traces of more than one job?", WORLD_SIZES_FIX, 0))
    items += mismatch
    # One order for the report, the Overview and the health screen: errors, warnings, then what was
    # left out by design; within each, the most rows lost first, then the profile's own items, then
    # the ranks in order.
    return sorted(items, key=lambda i: (SEVERITY_ORDER.get(i.severity, 2), -i.lost, -1 if i.rank is None else i.rank))


# Ranks of one job run at the same time: each rank's kernels span the steps profiled, and the
# spans overlap. A rank whose kernels ran RUN_GAP_S from the others' is another run's: a job run
# again, its rank folders copied in beside the first's. (The last kernel's start, not its end: a
# minute's gap needs no kernel's length, and a reopen reads one column of every kernel, not two.)
SPANS = """
SELECT k.rank, coalesce((SELECT min(l.file) FROM load_log l WHERE l.rank = k.rank AND l.kind = 'kineto' AND l.rows > 0),
                        r.path), k.first_ns, k.last_ns
FROM (SELECT rank, min(start_ns) AS first_ns, max(start_ns) AS last_ns FROM kernels GROUP BY rank) k
JOIN ranks r USING (rank)
WHERE k.first_ns >= $wall_clock
ORDER BY k.first_ns, k.rank
"""
OTHER_RUN = "another run's:"
OTHER_RUN_FIX = "open each run's files on their own: move this rank's out of the folder"
# Traces or folders of separate processes, said as such by discovery (discover.NO_DIST): separate
# runs, none compared with the others (ranks_apart), said so already.
NOT_DISTRIBUTED = "not a distributed run"


def _other_runs(profile) -> List[HealthItem]:
    """One warning per rank whose kernels ran apart in time from the run with the most ranks (of
    two as many, the later: as a rank claimed twice loads from the run that ended later)."""
    runs: List[list] = []  # [[(rank, path)], first_ns, last_ns]
    for rank, path, first, last in profile.con.execute(SPANS, {"wall_clock": WALL_CLOCK_NS}).fetchall():
        if runs and first <= runs[-1][2] + RUN_GAP_S * 1e9:
            runs[-1][0].append((rank, path))
            runs[-1][2] = max(runs[-1][2], last)
        else:
            runs.append([[(rank, path)], first, last])
    if len(runs) < 2:
        return []
    main = max(runs, key=lambda run: (len(run[0]), run[1]))
    main_ranks = rank_list(sorted(rank for rank, _ in main[0]))
    items = []
    for ranks, first, last in runs:
        if ranks is main[0]:
            continue
        gap = f"{gap_words((main[1] - last) / 1e9)} before" if last < main[1] else \
            f"{gap_words((first - main[2]) / 1e9)} after"
        items += [HealthItem("warning", rank, profile.named(path), f"{OTHER_RUN} its kernels ran {gap} those of "
                             f"{main_ranks}; not compared with them", OTHER_RUN_FIX, 0) for rank, path in ranks]
    return items


def ranks_apart(items: List[HealthItem], profile) -> Dict[int, str]:
    """The ranks what compares the ranks leaves out, and why: a file of theirs could not be loaded
    whole (NOT_WHOLE: their kernels, trace or folder; else that file, named), or they are another
    run's; every one where the processes loaded are separate runs (discovery said so), which no
    comparison across ranks is about; the ranks not loaded that the cluster step trace gives,
    where it is another run's."""
    separate = any(NOT_DISTRIBUTED in i.what for i in items)
    apart = {rank: "separate run" for rank in profile.ranks} if separate else {}
    other_run = [i.rank for i in items if i.rank is not None and i.what.startswith(OTHER_RUN)]
    fitting, other_steps, _ = _stand_ins(profile, other_run)
    if any(CLUSTER_OTHER_RUN in i.what for i in items):
        apart.update({rank: "another run" for rank in fitting + other_steps})
    else:
        apart.update({rank: "other steps" for rank in other_steps})
    apart.update({rank: "another run" for rank in other_run})
    # A rank whose kernels (or trace) or folder failed is not loaded whole; one whose other file
    # failed (its memory record, a link matrix) says which, and keeps the figures of its kernels.
    for i in failed(items):
        if i.rank is not None:
            kind = _kind(i)
            whole = kind is None or kind in KERNEL_SOURCES
            apart[i.rank] = NOT_WHOLE if whole or apart.get(i.rank) == NOT_WHOLE else \
                f"{PurePath(i.file).name} {NOT_WHOLE}"
    return apart


def traces_lost(items: List[HealthItem]) -> Set[int]:
    """The ranks whose trace failed to load whole: what only a trace holds (the stage markers among
    its host events) is missing for part of their kernels."""
    return {i.rank for i in failed(items) if i.rank is not None and _kind(i) in TRACES}


def _kind(item: HealthItem) -> Optional[str]:
    return kind_by_name(PurePath(item.file).name, source_modules())


def _stand_in(item: HealthItem, kind: str, kernel_files: list) -> HealthItem:
    # Files of another kind (a rank's other cycles or iterations give their own kernels, not its),
    # or of its kind that say they load in its place (an msprof iteration's splits).
    name = PurePath(item.file).name
    others = [(file, shapes, other) for rank, file, other, shapes, note in kernel_files if rank == item.rank and (
        other != kind or (note or "").startswith(f"in place of {name},"))]
    if not others:
        return item
    names = ", ".join(PurePath(file).name for file, _, _ in others)
    # Shapes lost only where another kind than the failed file's (which gives what it gives) stands in.
    shapes = "" if any(s or other == kind for _, s, other in others) else ", without their input shapes"
    # A trace gives more than kernels: what only it holds is missing all the same.
    trace = f"; its {TRACES[kind]} are missing" if kind in TRACES else ""
    return replace(item, what=f"{item.what}; its kernels come from {names} instead{shapes}{trace}")


def _stand_ins(profile, other_run: List[int]) -> Tuple[List[int], List[int], Optional[str]]:
    """The ranks not loaded the cluster step trace stands in for: those whose steps it gives are the
    loaded ranks' (``other_run`` aside), those of other steps, and its file (STAND_INS)."""
    rows = profile.con.execute(STAND_INS, {"loaded": list(profile.ranks), "other_run": other_run}).fetchall()
    return ([rank for rank, fits, _ in rows if fits], [rank for rank, fits, _ in rows if not fits],
            rows[0][2] if rows else None)


def _cluster_mismatch(profile, other_run: dict) -> List[HealthItem]:
    """msprof-analyze's cluster step trace copies each rank's step_trace_time rows; one that holds
    another Computing for a rank loaded here (of the run loaded: ``other_run``'s ranks are not) is
    another run's (a job run again into the folder)."""
    row = profile.con.execute(CLUSTER_MISMATCH, {**other_run, "same": CLUSTER_SAME}).fetchone()
    if row is None:
        return []
    file, rank, step, theirs, own, n = row
    at = f"rank {rank}, " + ("its row without a step" if step is None else f"step {step}")
    differs = (f"{at}: not among its own files' steps" if own is None else
               f"{at}: Computing {theirs:,.2f} us there, {own:,.2f} us in its own files")
    more = f" (and {n - 1} more)" if n > 1 else ""
    return [HealthItem("warning", None, profile.named(file), f"{PurePath(file).name} {CLUSTER_OTHER_RUN}: "
                       f"{differs}{more}; msprof-analyze's output of another run?", CLUSTER_MISMATCH_FIX, 0)]


def _item(rank, file: str, kind: str, rows: int, skipped: int, note: str) -> HealthItem:
    name = PurePath(file).name
    lost = _count(skipped, "event" if kind in ("trace_view", "kineto", "msprof_timeline") else "row")
    # A folder by its last two parts: an output folder's name alone does not say whose it is.
    zeros = ZEROS.search(note)
    fields = {"name": name, "lost": lost, "note": note, "note_head": note.split(": ", 1)[-1],
              "folder": "/".join(PurePath(file).parts[-2:]),
              "zeros": f", then {zeros[1]} zero bytes" if zeros else "",
              "why": WHY_SKIPPED_JSON if kind in JSON_KINDS else WHY_SKIPPED,
              "never": NEVER_JSON if kind in JSON_KINDS else NEVER}
    what, fix = SKIPPED_ONLY[0], SKIPPED_ONLY[1].format(**fields)
    if rows == 0:
        what = EVERY_ROW
    for pattern, w, f in CAUSES:
        if note and pattern.search(note):
            what, fix = w, f
            break
    else:
        if note:
            what, fix = "{name}: {note}", ""
    if kind == "ignored" or BY_DESIGN.search(note):
        severity = "info"
    elif UNKNOWN_LOSS.search(note) or KERNELS_OFF.search(note) or NOT_READ_ON.search(note) \
            or note.startswith(MAY_BE_PARSING):
        severity = "error"  # (whatever else its note says: a damaged file that also left rows out)
    elif LEFT_BESIDE.search(note) or kind == METADATA or note.startswith(NONE_HELD) or NOTHING_RAN in note:
        # (profiler_metadata.json lost costs the names of ranks not loaded, no figure; a step trace
        # of steps the device did nothing in alone holds no step, and nothing of it failed)
        severity = "warning"
    elif rows == 0 and (skipped or note) and (kind != "discovery" or LEFT_OUT.search(note)):
        severity = "error"
    else:
        severity = "warning"
    text = what.format(**fields)
    if skipped and "{lost}" not in what:
        text += f"; {lost} skipped"
    off = KERNELS_OFF.search(note)
    if off:  # said on the file that counts them; the kernel file beside it is the one not whole
        return HealthItem(severity, rank, str(PurePath(file).with_name("kernel_details.csv")), text, fix,
                          skipped + (int(off[1].replace(",", "")) if off[2] == FEWER else 0))
    return HealthItem(severity, rank, file, text, fix, skipped)


def passing_failure(profile) -> bool:
    """Whether a file or folder of the load failed for a PASSING cause. (A folder not searched is
    none of the load's: once readable, it is another key, cache_key.)"""
    notes = profile.con.execute("SELECT note FROM load_log WHERE note <> ''").fetchall()
    return any(PASSING.search(note) and not note.startswith(NOT_SEARCHED) for (note,) in notes)


def failed(items: List[HealthItem]) -> List[HealthItem]:
    """The files that exist and gave nothing, or lost an unknown part: while there are any, the run
    is incomplete."""
    return [i for i in items if i.severity == "error"]


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")
