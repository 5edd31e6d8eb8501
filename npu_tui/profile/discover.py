"""Finding the ranks and source files under a path, by content (design.md §3)."""

from __future__ import annotations

import errno
import gzip
import hashlib
import json
import os
import re
import stat
import time
import zlib
from collections import Counter
from contextvars import ContextVar
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Dict, List, Optional, Set, Tuple

from ..text import literal
from .errors import ProfileError
from .sources import cluster_modules, msprof_timeline, op_summary, profiler_metadata, source_modules
from .sources.base import HEAD_BYTES, MERGED_AS_ONE, NOT_SPLIT, csv_header, damaged_gzip_head, read_head, read_tail
from .sources.chrome_trace import flavour_told
from .sources.kineto import WORKER_RE, process_hint, rank_hint, written

MINDSPORE_SUFFIX = "_ascend_ms"  # MindSpore's rank folders (torch_npu's: _ascend_pt)
RANK_DIR_SUFFIXES = ("_ascend_pt", MINDSPORE_SUFFIX)
CLUSTER_DIR = "cluster_analysis_output"  # msprof-analyze writes its job-wide outputs here
OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"
INFO_RE = re.compile(r"^profiler_info(?:_(\d+))?\.json$")
MSPROF_INFO_RE = re.compile(r"^info\.json\.\d+$")
MSPROF_END_RE = re.compile(r"^end_info\.\d+$")
MSPROF_DEVICE_RE = re.compile(r"^device_(\d+)$")
MAX_SEARCH_DEPTH = 4
# torch_npu writes this into ASCEND_PROFILER_OUTPUT when its parse has finished (older versions do not)
PARSE_DONE = "analyse.done"
RECENT_S = 10.0  # files this fresh may still be growing: their sizes are looked at twice
# A parse writes its files over minutes, and stands still for seconds between them (the look above
# sees a moment): without its analyse.done, files this fresh may be a parse's still running.
RECENT_PARSE_S = 120.0
MAY_BE_PARSING = "parse may be in progress"
NO_PARSE_DONE = f"no {PARSE_DONE}"
GROWTH_WAIT_S = 0.3
FUTURE_S = 600.0
INFO_UNREADABLE = "profiler_info cannot be read"
ALONE = "not a distributed run (rank_id -1)"
NO_DIST = "not a distributed run (no distributedInfo)"
# How a rank no file of its own numbers is numbered (loader._assign_ranks).
FIRST_FREE = "the first rank no other folder claims"
NO_INFO = ("no profiler_info.json: the profiler was not stopped cleanly, or the folder is still being "
           f"written or was copied in part; numbered as {FIRST_FREE}")


@dataclass
class RankSource:
    """One rank's files. ``rank`` is None until the profile assigns it by folder order."""

    root: Path
    source_format: str
    files: Dict[str, List[Path]] = field(default_factory=dict)
    rank: Optional[int] = None
    info: dict = field(default_factory=dict)
    info_problem: Optional[Tuple[Path, str]] = None  # its profiler_info file, and why it could not be read
    # One device of an msprof output merged over several: only that device's rows of its files;
    # and the devices that output is split between here.
    device: Optional[int] = None
    devices: Tuple[int, ...] = ()
    left_out: List[Tuple[Path, str]] = field(default_factory=list)  # files of it not loaded, and why


@dataclass
class Discovery:
    path: Path
    layout: str
    ranks: List[RankSource]
    # Files that were recognised by name but not by content, and folders that could not be read.
    problems: List[Tuple[Path, str]] = field(default_factory=list)
    # msprof-analyze's job-wide outputs (cluster_analysis_output/), by kind.
    cluster: Dict[str, List[Path]] = field(default_factory=dict)


def _head(path: Path) -> bytes:
    """read_head, or b'' for a file that cannot be read now (its loader will say why), or that says
    it is empty: a file of /proc or /sys says so, and reading some of them waits for ever."""
    try:
        return read_head(path) if path.stat().st_size else b""
    except OSError:
        return b""


def _end(path: Path) -> bytes:
    """read_tail, or b'' for a file that cannot be read now."""
    try:
        return read_tail(path)
    except OSError:
        return b""


def classify(path: Path, modules: List[ModuleType]) -> Optional[str]:
    """The source kind of one file: by its content, else by the profiler's name for it. A file
    under the exact name the profiler gives one table whose content reads as another's (a
    memory_record.csv that lost its Total Allocated column reads as npu_module_mem's) is the named
    table's, damaged: its loader says what it lacks, where the other's would load it unsaid."""
    head = _head(path)
    if head.strip():
        for m in modules:
            if m.sniff(head):
                if m.KIND == "msprof_timeline" and msprof_timeline.torch_npus(_end(path)):
                    return "trace_view"
                if m.KIND in TRACE_KINDS:  # a trace whose head shows no event that tells whose it is
                    named = kind_by_name(path.name, modules)
                    return named if named in TRACE_KINDS and not flavour_told(head, named) else m.KIND
                exact = _names(tuple(modules))[0].get(path.name)
                return exact if exact is not None and exact not in TRACE_KINDS else m.KIND
    elif path.name.endswith(".json.gz") and _damaged(path):
        return "kineto"  # a trace whose gzip breaks in its head: its loader says so
    if path.name.endswith(ARCHIVES):  # msprof_export.tar.gz: no msprof file, whatever its name
        return None
    return kind_by_name(path.name, modules)


def kind_by_name(name: str, modules: List[ModuleType]) -> Optional[str]:
    """The source kind the profiler's name for a file says (without reading it)."""
    exact, named = _names(tuple(modules))
    if name in exact:
        return exact[name]
    return next((kind for kind, prefixes, pattern in named if name.startswith(prefixes)
                 or (pattern is not None and pattern.search(name))), None)


@lru_cache(maxsize=4)
def _names(modules: Tuple[ModuleType, ...]):
    """kind_by_name's lookups, built once: the profiler's exact names, then, in the modules' order,
    each kind's name prefixes and pattern (a folder of 50k files asks for every one)."""
    exact: Dict[str, str] = {}
    for m in modules:
        for n in m.FILE_NAMES:
            exact.setdefault(n, m.KIND)
    named = [(m.KIND, tuple(getattr(m, "NAME_PREFIXES", ())), getattr(m, "NAME_PATTERN", None)) for m in modules
             if getattr(m, "NAME_PREFIXES", ()) or getattr(m, "NAME_PATTERN", None) is not None]
    return exact, named


# The folders this thread's discovery could not list, and why (permission denied): said in the
# load's health, never passed over as if empty.
_UNLISTED: ContextVar[Optional[Dict[Path, str]]] = ContextVar("npu_tui_unlisted", default=None)
# Each real folder this thread's discovery listed, by the path it first reached it through.
_REACHED: ContextVar[Optional[Dict[Path, Path]]] = ContextVar("npu_tui_reached", default=None)
# Entries under a profiler file's name that are not files (a link to nothing, a pipe, a folder),
# and what they are: the file a user meant to load cannot be read, so the run is incomplete.
_NOT_FILES: ContextVar[Optional[Dict[Path, str]]] = ContextVar("npu_tui_not_files", default=None)
# What else this thread's discovery found that cannot be loaded, and why: said in the load's health.
_SAID: ContextVar[Optional[List[Tuple[Path, str]]]] = ContextVar("npu_tui_said", default=None)
NOT_EXPORTED = "not exported"
NOTHING_EXPORTED = "no exported files"
# An msprof db export beside the text export of the same collection (health: by design).
DB_BESIDE_TEXT = "db export beside files of the text export of the same collection"
TRACE_KINDS = ("kineto", "trace_view")
ARCHIVES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".zip")
# What a folder under a file's name ends in (a prefix alone, msprof_, would also take a folder).
FILE_SUFFIXES = (".csv", ".json", ".gz", ".db")
NOT_A_FILE = "not a file"
UNKNOWN_UNREADABLE = "cannot be read, so whether it is a profiler file cannot be told"
LINK_GONE = "a link to nothing (its target is gone)"
LINK_LOOP = "a link in a loop (it leads back to itself)"
# A rank or PROF_ folder gathered by a link whose target is gone (a mount away, a folder moved).
FOLDER_GONE = "folder gone"
# A folder beside the profile that was not looked into (not one of its parts): a warning.
NOT_SEARCHED = "folder not searched"
# A rank folder, PROF_* folder or output folder that is a file (an archive without its ending, a
# copy gone wrong): its rank's data is in it, and not read.
NOT_A_FOLDER = "a file where a folder should be"


def _listing(folder: Path) -> List[Path]:
    """The folder's entries; OSError where they cannot be listed, or listed but not looked at: a
    folder with read permission and no search permission (``chmod -R 644`` takes it from folders
    too) lists its names, and every stat or open of one fails."""
    # (by name: in one folder the same order as the paths', at a tenth of the cost, which at 50k
    # files beside a profile was seconds an open)
    entries = sorted(folder.iterdir(), key=lambda p: p.name)
    if entries:
        try:
            entries[0].lstat()
        except FileNotFoundError:
            pass  # gone since the listing
    return entries


def _entries(folder: Path) -> List[Path]:
    try:
        return _listing(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as e:
        unlisted = _UNLISTED.get()
        if unlisted is not None:
            # Said of the outermost folder that cannot be listed: inside one without search
            # permission, every folder fails the same way.
            while folder.parent != folder and _unlistable(folder.parent):
                folder = folder.parent
            unlisted.setdefault(folder, e.strerror or type(e).__name__)
        return []


def _unlistable(folder: Path) -> bool:
    try:
        _listing(folder)
    except OSError:
        return True
    return False


# pathlib raises on an entry it may not look at (inside a folder without search permission).
def _is_file(p: Path) -> bool:
    try:
        return p.is_file()
    except OSError:
        return False


def _is_dir(p: Path) -> bool:
    try:
        return p.is_dir()
    except OSError:
        return False


def _damaged(path: Path) -> bool:
    try:
        return damaged_gzip_head(path)
    except OSError:
        return False


def _files(folder: Path) -> List[Path]:
    files = []
    for p in _entries(folder):
        if _is_file(p):
            files.append(p)
        else:
            _note_not_file(p)
    return files


def _say(path: Path, note: str) -> None:
    said = _SAID.get()
    if said is not None:
        said.append((path, note))


def _note_not_file(p: Path) -> None:
    seen = _NOT_FILES.get()
    if seen is None or p in seen:
        return
    what = _what_instead(p)
    if what and (what != "a folder" or p.suffix in FILE_SUFFIXES) and (
            kind_by_name(p.name, source_modules()) or kind_by_name(p.name, cluster_modules())
            or (what in (LINK_GONE, LINK_LOOP) and _folder_named(p))):
        seen[p] = what


def _folder_named(p: Path) -> bool:
    """A name a rank or msprof folder goes by (one gathered by a link, say)."""
    return p.name.endswith(RANK_DIR_SUFFIXES) or p.name.startswith("PROF_")


def _files_as_folders(folder: Path) -> List[Tuple[Path, str]]:
    """The files in ``folder`` under a rank or PROF_* folder's name. (Named first: one stat a file
    would cost seconds beside 50k others.)"""
    return [(f, NOT_A_FOLDER) for f in _entries(folder) if _folder_named(f) and _is_file(f)]


def _what_instead(p: Path) -> Optional[str]:
    """What an entry that is not a regular file is, in words; None if it cannot be looked at."""
    try:
        mode = p.lstat().st_mode
        if stat.S_ISLNK(mode):
            try:
                mode = p.stat().st_mode
            except OSError as e:
                return LINK_LOOP if e.errno == errno.ELOOP else LINK_GONE
    except OSError:
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else None


def _dirs(folder: Path) -> List[Path]:
    """Sub-folders, linked ones too (ranks gathered into one folder by links), except a link back
    to the folder or one above it (a loop) and a link to a folder this discovery reached another
    way (beside it, or through another link: two links to each other are a loop too); either
    would find the same ranks again."""
    dirs = [p for p in _entries(folder) if _is_dir(p)]
    reached = _REACHED.get()
    if reached is None:
        if not any(p.is_symlink() for p in dirs):
            return dirs
        reached = {}
    here = folder.resolve()
    for p in dirs:
        if not p.is_symlink():
            reached.setdefault(here / p.name, p)
    out = []
    for p in dirs:
        if p.is_symlink():
            try:
                target = p.resolve()
            except (OSError, RuntimeError):
                continue
            if target == here or target in here.parents or reached.setdefault(target, p) != p:
                continue
        out.append(p)
    return out


GZIP_COPY = "a compressed copy of"
COPY = "a copy of"
SECOND = "a second"
EARLIER_EXPORT = "an earlier export of the same collection"


def _name_shape(name: str) -> str:
    """A file's name with its numbers as '#': the files a tool writes one a rank or worker share it."""
    return re.sub(r"\d+", "#", name)


def _group(files: List[Path], modules: List[ModuleType]) -> Dict[str, List[Path]]:
    out: Dict[str, List[Path]] = {}
    unknown: List[Path] = []
    kinds = {f.name: classify(f, modules) for f in files if not f.name.endswith(".gz")}
    for f in files:
        # `gzip -k` leaves the file and its copy side by side: both would load, every event twice.
        if f.name.endswith(".gz") and kinds.get(f.name[:-3]):
            _say(f, f"{GZIP_COPY} {f.name[:-3]} beside it: not loaded, or every event would count twice")
            continue
        kind = kinds[f.name] if f.name in kinds else classify(f, modules)
        # (profiler_metadata.json goes with its rank folder's files, _rank_source: alone it is no rank's)
        if kind and kind != profiler_metadata.KIND:
            out.setdefault(kind, []).append(f)
        elif kind is None:
            unknown.append(f)
    # Kineto traces are named as their maker likes, so told by content: one named as the traces
    # beside it (sampled_rank-1.json.gz by sampled_rank-0.json.gz) whose content tells nothing (empty,
    # damaged in its head) is one of them, and its loader says what is wrong with it, not passed over.
    shapes = {_name_shape(f.name) for f in out.get("kineto", ())}
    out.get("kineto", []).extend(f for f in unknown if f.name.endswith((".json", ".json.gz"))
                                 and _name_shape(f.name) in shapes)
    by_kind = {m.KIND: m for m in modules}
    return {kind: _one_each(_newest_export(fs, by_kind[kind]), by_kind[kind]) if len(fs) > 1 else fs
            for kind, fs in out.items()}


def _newest_export(files: List[Path], module: ModuleType) -> List[Path]:
    """Of msprof's exports of one collection into one folder (``op_summary_{time}.csv``, or sliced,
    ``op_summary_slice_{N}_{time}.csv``: ``msprof --export`` run again writes them all again under
    a later time), the latest export's, as msprof's own readers take: each would load every task
    again. A slice stands beside the other slices of its export, whose times may differ by a
    second or two: the latest export's are its slice 0 and those written after it."""
    pattern = getattr(module, "EXPORT_NAME", None)
    exports = {f: m for f in files if pattern is not None and (m := pattern.match(f.name))}
    # each file's own: of a kind (the timeline's splits) and a device, model and iteration (part)
    groups: Dict[Tuple[Optional[str], ...], Dict[Path, re.Match]] = {}
    for f, m in exports.items():
        groups.setdefault((m.groupdict().get("kind"), m["part"]), {})[f] = m
    left: Set[Path] = set()
    for group in groups.values():
        if len(group) < 2:
            continue
        newest = max(group, key=lambda f: int(group[f]["time"]))
        if group[newest]["slice"] is None:
            kept = {newest}
        else:  # the latest export's slices: from the latest slice 0 on (an earlier export's are older)
            first = max((int(m["time"]) for m in group.values() if m["slice"] == "0"),
                        default=int(group[newest]["time"]))
            kept = {f for f, m in group.items() if m["slice"] is not None and int(m["time"]) >= first}
        for f in group:
            if f not in kept:
                left.add(f)
                _say(f, f"{EARLIER_EXPORT} ({newest.name} beside it, exported later): not loaded, or its rows "
                        "would count twice")
    return [f for f in files if f not in left]


def _one_each(files: List[Path], module: ModuleType) -> List[Path]:
    """Files of one kind in one folder, less the ones that would load the same rows again: a copy
    (``kernel_details (1).csv``, ``x.json~``, a trace copied under another name) and, of a file
    the profiler writes once under a fixed name, any other beside it (a backup, another run's).
    Files a profiler writes several of (msprof's slices and iterations, a worker's cycles) stay.
    The profiler's own name is kept first, then the shortest (a copy's name adds to it)."""
    names = set(module.FILE_NAMES)
    ordered = sorted(files, key=lambda f: (f.name not in names, len(f.name), f.name))
    # One file twice has one size, then one head, then one end: each is read only where the
    # one before it is shared (a copy's, mostly).
    sizes = {f: _content_size(f) for f in ordered}
    shared = Counter(sizes.values())
    heads = {f: _digest(f) for f, size in sizes.items() if size and shared[size] > 1}
    shared = Counter((sizes[f], h) for f, h in heads.items() if h)
    tails = {f: _tail(f, sizes[f]) for f, h in heads.items() if h and shared[sizes[f], h] > 1}
    signs = {f: (sizes[f], heads[f], t) for f, t in tails.items() if t}
    # The profiler's own file, when it can be read: else the others are what there is.
    only = ordered[0] if len(names) == 1 and ordered[0].name in names and sizes[ordered[0]] is not None else None
    kept: Dict[object, Path] = {}
    for f in ordered:
        sign = signs.get(f)
        if sign is not None and sign in kept:
            _say(f, f"{COPY} {kept[sign].name} beside it (the same content): not loaded, "
                    "or its rows would count twice")
        elif only is not None and f is not only:
            _say(f, f"{SECOND} {module.KIND} file beside {only.name}, which the profiler writes once: "
                    "not loaded (a backup, or another run's)")
        else:
            kept[sign if sign is not None else f] = f
    chosen = set(kept.values())
    return [f for f in files if f in chosen]


def _copied_ranks(sources: List[RankSource]) -> Tuple[List[RankSource], List[Tuple[Path, str]]]:
    """Rank folders without a profiler_info whose files are another's (a folder copied under a new
    name, its profiler_info removed or never there, so no rank is claimed twice): each file's size,
    then, where every size is shared, the head and end of each. The rank a profiler_info states is
    kept, else the first; a copy is said and not loaded, or its rows would count twice as a rank of
    their own. (Folders that each state their rank are told apart by it: see the loader.)"""
    sizes = {f: _content_size(f) for s in sources for fs in s.files.values() for f in fs}
    by_size: Dict[object, List[RankSource]] = {}
    for s in sources:
        if s.files:
            by_size.setdefault(tuple(sorted((k, sizes[f]) for k, fs in s.files.items() for f in fs)), []).append(s)
    copies: Dict[int, RankSource] = {}  # id of a copy -> the rank kept
    for same in (g for g in by_size.values() if len(g) > 1):
        kept: Dict[object, RankSource] = {}
        for s in sorted(same, key=lambda s: s.rank is None):  # (stable: folder order within)
            files = sorted(f for fs in s.files.values() for f in fs)
            sign = tuple((_digest(f), _tail(f, sizes[f] or 0)) for f in files)
            if None in (x for pair in sign for x in pair):
                continue
            if sign in kept and not any(INFO_RE.match(f.name) for f in _files(s.root)):
                copies[id(s)] = kept[sign]
            else:
                kept.setdefault(sign, s)
    said = [(s.root, f"{COPY} {copies[id(s)].root.name} beside it (the same files): not loaded, or its rows "
                     "would count twice as another rank's") for s in sources if id(s) in copies]
    return [s for s in sources if id(s) not in copies], said


def _content_size(path: Path) -> Optional[int]:
    """A file's size, a gzip stream's uncompressed (its trailer's, modulo 4 GiB as gzip keeps it;
    looked for in a file whose name holds ``.gz``, told by its bytes); None if it cannot be read
    now (its loader will say why)."""
    try:
        size = path.stat().st_size
        if ".gz" not in path.name:
            return size
        with open(path, "rb") as f:
            if f.read(2) != b"\x1f\x8b":
                return size
            f.seek(max(0, size - 4))
            return int.from_bytes(f.read(4), "little")
    except OSError:
        return None


def _digest(path: Path) -> Optional[bytes]:
    """A digest of a file's first 64 KiB of content; None if it cannot be read now."""
    head = _head(path)
    return hashlib.blake2b(head, digest_size=16).digest() if head else None


def _tail(path: Path, size: int) -> Optional[bytes]:
    """A digest of a file's last 64 KiB of content (a gzip stream is read to its end for them);
    None if it cannot be read now."""
    try:
        with open(path, "rb") as f:
            if f.read(2) != b"\x1f\x8b":
                f.seek(max(0, size - HEAD_BYTES))
                return hashlib.blake2b(f.read(), digest_size=16).digest()
            f.seek(0)
            tail = b""
            with gzip.open(f) as stream:
                while chunk := stream.read(1 << 20):
                    tail = (tail + chunk)[-HEAD_BYTES:]
            return hashlib.blake2b(tail, digest_size=16).digest()
    except (OSError, EOFError, zlib.error):
        return None


def _profiler_info(folder: Path) -> Tuple[Optional[int], dict, Optional[Tuple[Path, str]]]:
    """Rank and settings from ``profiler_info[_N].json``: the file name's N, then its rank_id; and
    the file with why it could not be read, if it could not."""
    for f in _files(folder):
        m = INFO_RE.match(f.name)
        if not m:
            continue
        problem, why = None, ""
        try:
            text = f.read_text(encoding="utf-8-sig")
            info = json.loads(text) if text.strip() else {}
            why = "" if text.strip() else "empty"
        except OSError as e:
            why, info = e.strerror or type(e).__name__, {}
        except ValueError:
            why, info = "not valid JSON (damaged, or written in part)", {}
        if not isinstance(info, dict):
            why, info = "not a JSON object", {}
        if why:
            whence = "its name" if m.group(1) is not None else FIRST_FREE
            problem = (f, f"{INFO_UNREADABLE}: {why}; its rank is taken from {whence}, the profiler's "
                          "settings are unknown")
        stated = int(m.group(1)) if m.group(1) is not None else _rank_id(info)
        if isinstance(stated, int) and stated >= 2**31 and problem is None:  # -1: not distributed
            problem = (f, f"rank {stated} is past the ranks npu-tui can hold (up to 2^31 - 1); its rank "
                          f"is taken from {FIRST_FREE}")
        elif stated is not None and (isinstance(stated, bool) or not isinstance(stated, int)):
            # folder order may then swap two ranks: said, as an unreadable file is
            problem = (f, f"rank_id {literal(json.dumps(stated))[:40]} is not a rank number; its rank is "
                          f"taken from {FIRST_FREE}")
        elif problem is None and m.group(1) is not None and _rank(_rank_id(info)) not in (None, stated):
            # (the profiler names the file by the rank it writes in it: one of the two was changed)
            problem = (f, f"its name says rank {stated}, its rank_id {_rank_id(info)}: the rank is taken from "
                          "its name (a file renamed, or edited?)")
        return _rank(stated), info, problem
    return None, {}, None


def _rank_id(info: dict):
    """profiler_info's rank_id; written as text (by hand, or by a tool), the number it says."""
    stated = info.get("rank_id")
    if isinstance(stated, str) and re.fullmatch(r"-?[0-9]+", stated.strip()):
        return int(stated)
    return stated


def _rank(value) -> Optional[int]:
    """A rank a file states, or None for one that cannot be (negative, or past the 32-bit ranks
    are stored as): the folder order gives it one instead."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31 else None


def _is_rank_dir(folder: Path) -> bool:
    return (
        folder.name.endswith(RANK_DIR_SUFFIXES)
        or _is_dir(folder / OUTPUT_DIR)
        or any(INFO_RE.match(f.name) for f in _files(folder))
    )


def _msprof_output_dirs(folder: Path) -> List[Path]:
    """Where an msprof PROF_* folder keeps its exported files, newest layout first."""
    out = [folder / "mindstudio_profiler_output"] if _is_dir(folder / "mindstudio_profiler_output") else []
    for dev in _dirs(folder):
        if dev.name.startswith("device_"):
            for sub in ("timeline", "summary"):
                if _is_dir(dev / sub):
                    out.append(dev / sub)
    return out


def _rank_source(folder: Path, modules: List[ModuleType]) -> RankSource:
    rank, info, problem = _profiler_info(folder)
    out_dir = folder / OUTPUT_DIR
    files = _group(_files(out_dir), modules) if _is_dir(out_dir) else {}
    if not files:
        # The output folder's files copied up into the rank folder itself.
        files = _group(_files(folder), modules)
    if not files:
        # No text/db export yet: fall back to the msprof export inside PROF_* (same data).
        for prof in _dirs(folder):
            if prof.name.startswith("PROF_"):
                for d in _msprof_output_dirs(prof):
                    for k, v in _group(_files(d), modules).items():
                        files.setdefault(k, []).extend(v)
    # Beside profiler_info, the run's communication groups: read with the rank's files, not as one.
    metadata = folder / profiler_metadata.FILE_NAMES[0]
    if files and _is_file(metadata):
        files.setdefault(profiler_metadata.KIND, [metadata])
    fmt = "db" if set(files) - {profiler_metadata.KIND} == {"sqlite_export"} else "torch_npu"
    left_out = [(out_dir, NOT_A_FOLDER)] if _is_file(out_dir) else []
    return RankSource(root=folder, source_format=fmt, files=files, rank=rank, info=info, info_problem=problem,
                      left_out=left_out)


def may_be_parsing(folder: Path) -> bool:
    """Whether a rank folder holds raw data (PROF_*) and its output no analyse.done: a file missing
    from the output may be one the parse has not written yet (a torch_npu that writes no
    analyse.done, or a parse that has not finished while its files stand still)."""
    return not _is_file(folder / OUTPUT_DIR / PARSE_DONE) and _raw_data(folder)


def _raw_data(folder: Path) -> bool:
    return any(d.name.startswith("PROF_") for d in _dirs(folder))


def parse_state(folder: Path, done_elsewhere: bool = False) -> Optional[str]:
    """Why a torch_npu rank folder is not parsed yet (the profiler's offline parse still running, or
    never run), or None when it is, as far as the files tell. ``done_elsewhere``: another rank of
    the same profile has its analyse.done, so this torch_npu writes one."""
    out = folder / OUTPUT_DIR
    if _is_file(out / PARSE_DONE):
        return None
    files = _files(out) if _is_dir(out) else []
    if not files:
        if _raw_data(folder):
            return ("parse in progress or never run: raw data (PROF_*) and no ASCEND_PROFILER_OUTPUT yet; "
                    "wait for the profiler, or run torch_npu.profiler.profiler.analyse on the folder")
        return None
    if done_elsewhere:
        return f"parse in progress: no {PARSE_DONE} yet, where the other ranks have theirs"
    if _growing(files):
        return f"parse in progress: its files are still growing (no {PARSE_DONE} yet)"
    return None


def parse_doubt(folder: Path) -> Optional[str]:
    """What a rank folder loaded leaves in doubt when its raw data (PROF_*) has no analyse.done
    beside its output: a torch_npu that writes none, or a parse stopped part way, or one still
    running between its writes (a moment's look saw no file grow)."""
    if not may_be_parsing(folder):
        return None
    now = time.time()
    ages = [now - m for m in _mtimes(folder / OUTPUT_DIR) if now - m >= -FUTURE_S]
    if ages and min(ages) <= RECENT_PARSE_S:
        return f"{MAY_BE_PARSING}: its files were written {max(min(ages), 0):.0f} s ago, and no {PARSE_DONE} yet"
    return (f"{NO_PARSE_DONE} beside its files and raw data (PROF_*): a torch_npu that writes none, or a parse "
            "that stopped part way")


def _mtimes(folder: Path) -> List[float]:
    out = []
    for f in _files(folder) if _is_dir(folder) else []:
        try:
            out.append(f.stat().st_mtime)
        except OSError:
            continue
    return out


def _growing(files: List[Path]) -> bool:
    """Whether files written just now change size within a moment (a copy made just now does not)."""
    def sizes():
        out = {}
        for f in files:
            try:
                st = f.stat()
            except OSError:
                continue
            out[f] = (st.st_size, st.st_mtime)
        return out
    before = sizes()
    # A file written within RECENT_S, or dated ahead of this clock by less than FUTURE_S (a file
    # server's clock a little ahead); one far ahead is no writer's of now, but a copy that kept a
    # skewed machine's times.
    now = time.time()
    if not any(-FUTURE_S <= now - m <= RECENT_S for _, m in before.values()):
        return False
    time.sleep(GROWTH_WAIT_S)
    return sizes() != before


def _unparsed(sources: List[RankSource]) -> Tuple[List[RankSource], List[Tuple[Path, str]]]:
    """The rank folders whose parse has finished, and a problem for each of the others (left out,
    not half-loaded as if complete)."""
    done = [_is_file(s.root / OUTPUT_DIR / PARSE_DONE) for s in sources]
    ready, problems = [], []
    for s in sources:
        # Output files copied up into the rank folder are no parse's: whatever PROF_* beside them
        # (profiler_metadata.json is the profiler's own, there from the start).
        flat = any(f.parent == s.root for k, fs in s.files.items() if k != profiler_metadata.KIND for f in fs)
        parsed = s.source_format != "msprof" and not flat
        why = parse_state(s.root, done_elsewhere=any(done)) if parsed else None
        if why:
            problems.append((s.root, why))
            continue
        ready.append(s)
        doubt = parse_doubt(s.root) if parsed else None
        if doubt:  # (of its output folder: its files)
            problems.append((s.root / OUTPUT_DIR, doubt))
    return ready, problems


def _info_problems(sources: List[RankSource]) -> List[Tuple[Path, str]]:
    """torch_npu writes profiler_info_N.json last, when the profiler stops: without it the folder
    is from a job that died, is still being written, or was copied in part. One that cannot be
    read leaves the rank's settings unknown."""
    out = []
    for s in sources:
        if s.info_problem:
            out.append(s.info_problem)
        elif not any(INFO_RE.match(f.name) for f in _files(s.root)):
            out.append((s.root, NO_INFO))
    # rank_id -1: a run of one process. Several of them are separate runs, not ranks of one job.
    alone = [s for s in sources if s.rank is None and _rank_id(s.info) == -1]
    if len(alone) > 1:
        out += [(s.root, f"{ALONE}: {len(alone)} folders here say so, separate runs loaded side by side as "
                         "ranks in folder order, none compared with the others") for s in alone]
    return out


def _msprof_rank(dev: Path) -> Optional[int]:
    """A device_N folder's rank: ``rank_id`` of its info.json.N (JSON without a .json ending; -1
    when the job was not distributed), else N."""
    for f in _files(dev):
        if MSPROF_INFO_RE.match(f.name):
            try:
                info = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            rank = _rank(info.get("rank_id") if isinstance(info, dict) else None)
            if rank is not None:
                return rank
    m = MSPROF_DEVICE_RE.match(dev.name)
    return _rank(int(m.group(1))) if m else None


def _msprof_ended(dev: Path) -> dict:
    """A device_N folder's end_info.N (collectionTimeEnd: µs, as a string) as profiler_info's
    end_info (ns), which tells a rank's later run from its earlier (loader._assign_ranks); {} where
    it cannot be read."""
    for f in _files(dev):
        if MSPROF_END_RE.match(f.name):
            try:
                end = json.loads(f.read_text(encoding="utf-8")).get("collectionTimeEnd")
                return {"end_info": {"collectionTimeEnd": int(Decimal(str(end)) * 1000)}}
            except (OSError, ValueError, AttributeError, ArithmeticError, TypeError):
                return {}
    return {}


def _msprof_sources(prof: Path, modules: List[ModuleType], depth: int = 0) -> List[RankSource]:
    """A PROF_* folder: one rank per device_N, or its merged mindstudio_profiler_output, or its db
    export; one that holds none (a collection per metric set: PROF_GROUP_*/PROF_<metric>/PROF_000001_*),
    the PROF_* folders inside it, to MAX_SEARCH_DEPTH."""
    devices = [d for d in _dirs(prof) if MSPROF_DEVICE_RE.match(d.name)]
    merged = prof / "mindstudio_profiler_output"
    # msprof --type=db writes its export beside the folders, as PROF_*/msprof_{time}.db
    dbs = _group(_files(prof), modules).get("sqlite_export", [])
    if not devices and not _is_dir(merged) and not dbs:
        if depth >= MAX_SEARCH_DEPTH:
            return []
        return [s for d in _dirs(prof) if d.name.startswith("PROF_") for s in _msprof_sources(d, modules, depth + 1)]
    texts = {} if _is_dir(merged) else {
        dev: _merged_groups(*(_group(_files(dev / sub), modules) for sub in ("timeline", "summary"))) for dev in devices}
    text = _is_dir(merged) or any(texts.values())
    names = ", ".join(d.name for d in devices)
    # Beside a text export, the db is the same run again: not read (its tasks alone take a while).
    left_out = [(db, f"{DB_BESIDE_TEXT}: not loaded") for db in dbs] if text else []
    # msprof --analyze=on: its communication analysis, of the PROF folder's one device
    analyze = _group(_files(prof / "analyze"), modules) if _is_dir(prof / "analyze") else {}
    if analyze and len(devices) > 1:
        left_out += [(f, f"msprof's analysis over {names}, whose ops it does not tell apart by device: not loaded")
                     for v in analyze.values() for f in v]
        analyze = {}
    by_db = bool(dbs) and not text  # the db export stands in for a text export
    if _is_dir(merged) and len(devices) > 1:
        out = _split_by_device(prof, merged, devices, modules)
    elif _is_dir(merged) or (by_db and len(devices) <= 1):
        files = _merged_groups(_group(_files(merged), modules) if _is_dir(merged) else {"sqlite_export": dbs}, analyze)
        out = [RankSource(root=prof, source_format="msprof" if _is_dir(merged) else "db", files=files,
                          rank=_msprof_rank(devices[0]) if devices else None,
                          info=_msprof_ended(devices[0]) if devices else {})]
        if len(devices) == 1 and _is_dir(merged) and BY_DEVICE_KINDS & set(files) and _says_device(files):
            # Its device's rows: the output may be merged over devices whose folders were not copied.
            out[0].device = int(MSPROF_DEVICE_RE.match(devices[0].name).group(1))
            out[0].devices = (out[0].device,)
    elif by_db:  # (one rank: its loader says when its tasks are of several devices)
        out = [RankSource(root=prof, source_format="db", files={"sqlite_export": dbs})]
    else:
        out = [RankSource(root=dev, source_format="msprof", files=_merged_groups(files, analyze),
                          rank=_msprof_rank(dev), info=_msprof_ended(dev)) for dev, files in texts.items() if files]
    if out:
        out[0].left_out += left_out
    for dev in devices:
        if texts.get(dev) or _is_dir(merged) or by_db:
            continue
        if _is_dir(dev / "data"):
            _say(dev, f"{NOT_EXPORTED}: raw data only (device_N/data); export it first: msprof --export=on "
                      f"--output={prof}")
        else:  # (a warning, as a rank folder missing: nothing here failed to load)
            _say(dev, f"{NOTHING_EXPORTED} (timeline/, summary/) nor raw data (data/) of rank {_msprof_rank(dev)}: "
                      "not loaded")
    return out


def _merged_groups(*groups: Dict[str, List[Path]]) -> Dict[str, List[Path]]:
    """Files grouped by kind (_group), of several folders together."""
    out: Dict[str, List[Path]] = {}
    for g in groups:
        for k, v in g.items():
            out.setdefault(k, []).extend(v)
    return out


MSPROF_KINDS = {"op_summary", "msprof_timeline"}
# Merged msprof files whose rows say their device (a Device_id column): split between the ranks.
BY_DEVICE_KINDS = {"op_summary"}
DEVICE_COLUMNS = {"Device_id", "Device ID"}


def _split_by_device(prof: Path, merged: Path, devices: List[Path], modules: List[ModuleType]) -> List[RankSource]:
    """The merged output of several devices: one rank per device_N, each with its device's rows of
    the files that say their device; the others, which would give every rank all devices' rows,
    are left out (so the run is incomplete) and said. Files that should say their device and do
    not (no Device_id column): one rank for the whole, said too."""
    files = _group(_files(merged), modules)
    names = ", ".join(d.name for d in devices)
    split = {k: v for k, v in files.items() if k in BY_DEVICE_KINDS}
    if not _says_device(files):
        return [RankSource(root=prof, source_format="msprof", files=files, left_out=[(
            merged, f"{MERGED_AS_ONE}: merged over {names}, and its op_summary has no Device_id column; "
                    f"its figures are the devices' together")])]
    left_out = [(f, f"{NOT_SPLIT}: merged over {names}, and its rows do not say their device; left out")
                for k, v in sorted(files.items()) if k not in BY_DEVICE_KINDS for f in v]
    numbers = tuple(int(MSPROF_DEVICE_RE.match(d.name).group(1)) for d in devices)
    return [RankSource(root=d, source_format="msprof", files=split, rank=_msprof_rank(d), left_out=left_out,
                       device=n, devices=numbers, info=_msprof_ended(d)) for d, n in zip(devices, numbers)]


def _says_device(files: Dict[str, List[Path]]) -> bool:
    """Whether the merged files to split by device have the column that says it (or there are none)."""
    return all(DEVICE_COLUMNS & set(csv_header(_head(f))) for k, v in files.items() if k in BY_DEVICE_KINDS for f in v)


def _format(kinds: set) -> str:
    """The format of a rank's files, as the profile names it, by what they are."""
    if kinds in ({"kineto"}, {"trace_view"}):
        return next(iter(kinds))
    if kinds == {"sqlite_export"}:
        return "db"
    return "msprof" if kinds <= MSPROF_KINDS else "torch_npu"


def _loose_sources(folder: Path, modules: List[ModuleType]) -> List[RankSource]:
    """An output folder, or a folder of traces: Kineto traces are one rank per file."""
    files = _group(_files(folder), modules)
    workers: Dict[object, RankSource] = {}
    unnamed: List[Tuple[Path, str, Optional[int]]] = []
    for f in files.pop("kineto", []):
        rank, process = _trace_rank(f), process_hint(_head(f))
        m = WORKER_RE.match(f.name)
        # One worker is one rank, and a schedule that cycles writes it a trace per cycle: by the
        # process the trace says it was taken in (with a worker's name and rank, one run of
        # tensorboard_trace_handler's worker: ranks may share a name, and their pids in containers;
        # a handler of one's own names files as it likes; a pid without its host only within a
        # distributedInfo rank: every container's first pid is 1), else by that rank, else the
        # file is one. Two processes of one rank or worker name are two runs side by side, not
        # one: the rank (the loader) or the worker (below) claimed twice.
        if m and process is None:  # no host op (an empty cycle): its worker's, once known
            unnamed.append((f, m.group(1), rank))
            continue
        known = process is not None and (process[0] or rank is not None)
        key = (("worker", m.group(1), rank, process) if m else ("process", rank, process) if known
               else ("rank", rank) if rank is not None else ("file", f))
        _add_trace(workers, key, folder, f, rank)
    for f, name, rank in unnamed:  # the worker's of that name and rank; without a rank, its first
        same = [k for k in workers if k[:2] == ("worker", name)]
        key = next((k for k in same if k[2] == rank), same[0] if same and rank is None else ("worker", name, rank))
        _add_trace(workers, key, folder, f, rank)
    for s in workers.values():
        s.files["kineto"].sort()
    out: List[RankSource] = []
    in_order = sorted(workers.items(), key=lambda kv: kv[1].files["kineto"][0])  # in file order
    # A worker's name is who it is: a second process under it, with no rank to tell the two apart,
    # is the worker run again. The run written later stays, as of a rank claimed twice (loader).
    kept: Dict[str, RankSource] = {}
    for key, s in in_order:
        if key[0] == "worker" and s.rank is None and (
                key[1] not in kept or traces_ended(s) > traces_ended(kept[key[1]])):
            kept[key[1]] = s
    # Traces of processes none of which was a rank of a distributed job: separate runs (a script
    # run twice into one handler's folder), compared as ranks only for want of a better reading.
    alone = len(workers) > 1 and all(s.rank is None for s in workers.values())
    for key, s in in_order:
        if key[0] == "worker" and s.rank is None and kept[key[1]] is not s:
            held = kept[key[1]]
            later = ", whose run ended later" if traces_ended(held) > traces_ended(s) else ""
            _say(s.files["kineto"][0], f"worker {key[1]} claimed twice, by {held.files['kineto'][0].name} too{later}: "
                                       f"not loaded{more_traces(s)}")
            continue
        out.append(s)
    if alone and len(out) > 1:
        for s in out:
            _say(s.files["kineto"][0], f"{NO_DIST}: the {len(out)} processes whose traces are here carry "
                                       "none: separate runs, loaded side by side as ranks in file order, none compared "
                                       "with the others")
    # Each rank's db export gathered into one folder (copied off every node): a rank each, the one
    # its name gives, not one rank whose first db left the others unread as the same run's.
    dbs = [f for f in files.get("sqlite_export", []) if RANK_DB.match(f.name)]
    if len(dbs) > 1:
        # The folder's other files (an analysis.db) are one of those ranks', which it cannot tell:
        # loaded as a rank of their own, they made one without kernels.
        names = ", ".join(f.name for f in dbs)
        for f in sorted(f for v in files.values() for f in v if f not in dbs):
            _say(f, f"{BESIDE_RANK_DBS} ({names}): whose it is, nothing here tells; not loaded")
        files = {}
        out += [RankSource(root=folder, source_format="db", files={"sqlite_export": [f]}, rank=db_rank(f))
                for f in dbs]
    if files:
        # (one rank's db: its rank, where no profiler_info above says it)
        out.insert(0, RankSource(root=folder, source_format=_format(set(files)), files=files,
                                 rank=db_rank(dbs[0]) if len(dbs) == 1 else None))
    return out


BESIDE_RANK_DBS = "beside several ranks' db exports"
# torch_npu's and MindSpore's db export of a rank, named for its rank id (without one, of a run
# that was not distributed).
RANK_DB = re.compile(r"^ascend_(?:pytorch|mindspore)_profiler_(\d+)\.db$")


def db_rank(path: Path) -> Optional[int]:
    """The rank a db export's name gives, if any."""
    m = RANK_DB.match(path.name)
    return int(m.group(1)) if m else None


# Folders whose contents take their rank from the folder above them (_rank_above).
RANK_STATED_ABOVE = (OUTPUT_DIR, *op_summary.DEVICE_PARTS)


def _rank_above(folder: Path, source: RankSource) -> Optional[Tuple[Path, str]]:
    """The rank of what is in ``folder``, a rank's output folder (or the rank folder, its files
    copied up into it) or an msprof device_N's timeline or summary folder, as the rank folder or
    device_N states it (profiler_info, info.json.N), set on ``source``; a profiler_info that cannot
    be read, if so."""
    above = Path(os.path.abspath(folder)).parent
    for rank_dir in ((above,) if folder.name == OUTPUT_DIR else ()) + (folder,):
        if _is_rank_dir(rank_dir):
            source.rank, source.info, problem = _profiler_info(rank_dir)
            return problem
    if folder.name in RANK_STATED_ABOVE and MSPROF_DEVICE_RE.match(above.name):
        source.rank = _msprof_rank(above)
    return None


def _trace_rank(f: Path) -> Optional[int]:
    """A Kineto trace's distributedInfo rank: in its head, where torch writes it, else at its end (a
    tool that rewrote the trace may have put it after the events)."""
    hint = rank_hint(_head(f))
    return _rank(hint if hint is not None else rank_hint(_end(f)))


def traces_ended(s: RankSource) -> int:
    """When a Kineto worker's last trace was written (ns, kineto.written); -1 where no name says."""
    return max(map(written, s.files.get("kineto", ())), default=-1)


def more_traces(s: RankSource) -> str:
    """The rest of a left-out Kineto worker's traces (its cycles), which its first one names."""
    more = len(s.files.get("kineto", [])) - 1
    return f", nor its {more} other trace{'s' if more > 1 else ''}" if more > 0 else ""


def _add_trace(workers: Dict[object, RankSource], key, folder: Path, f: Path, rank: Optional[int]) -> None:
    if key in workers:
        workers[key].files["kineto"].append(f)
    else:
        workers[key] = RankSource(root=folder, source_format="kineto", files={"kineto": [f]}, rank=rank)


OTHER_PROFILE = "another profile beside"


def _beside(folder: Path, modules: List[ModuleType], what: str = "the rank folders") -> List[Tuple[Path, str]]:
    """Profiler files loose in a folder of rank (or PROF_*) folders: another run, not one of its
    ranks, so not loaded, and said."""
    return [(f, f"{OTHER_PROFILE} {what}") for s in _loose_sources(folder, modules)
            for fs in s.files.values() for f in fs]


BELOW = "a rank folder below the others"
FILES_BELOW = "profiler files in a folder below the others"
NODE_CLUSTER = "msprof-analyze's outputs of one node's ranks, not loaded: they are not the job's"


def _ranks_below(folders: List[Path], prof: bool = False) -> List[Tuple[Path, str]]:
    """Rank folders right inside ``folders`` (a rank folder copied into another with ``cp -r``, or
    a node's folder beside the rank folders), and with ``prof`` msprof's PROF_* folders (beside
    PROF_* folders; a torch_npu rank folder holds its own): not loaded, as they may be another
    run's, and said; they were passed over without a word, and the job looked whole without them.
    Told by name alone, one listing each: discovery runs at every open, and a checkpoint or dataset
    folder beside the ranks may hold many thousands of entries."""
    found = []
    for folder in folders:
        try:
            with os.scandir(folder) as entries:
                names = sorted(e.name for e in entries
                               if e.name.endswith(RANK_DIR_SUFFIXES) or (prof and e.name.startswith("PROF_")))
        except OSError:
            continue
        found += [(folder / n, f"{BELOW}, not loaded") for n in names
                  if _is_dir(folder / n) and not _loops_back(folder / n)]
    return found


# How many of a folder's files are looked into to tell whether it holds profiler files: a dataset
# or checkpoint folder beside the traces may hold many thousands, and discovery runs at every open.
FILES_LOOKED_AT = 64


def _holds_profile_files(folder: Path, modules: List[ModuleType]) -> bool:
    """Whether ``folder`` holds a file a loader reads: by its name (trace, CSV or db), the first
    FILES_LOOKED_AT of them by their heads."""
    named = [p for p in _entries(folder) if p.name.endswith(FILE_SUFFIXES)][:FILES_LOOKED_AT]
    return any(_is_file(p) and classify(p, modules) for p in named)


def _loops_back(p: Path) -> bool:
    """A link to the folder it is in, or to one above it: the same ranks again, not more (_dirs)."""
    if not p.is_symlink():
        return False
    try:
        target = p.resolve()
    except (OSError, RuntimeError):
        return False
    here = p.parent.resolve()
    return target == here or target in here.parents


def _candidates(folder: Path, modules: List[ModuleType], depth: int = 0) -> List[Path]:
    """Sub-folders that would load, to suggest when the given folder holds no profile itself."""
    if depth > 0 and (_is_rank_dir(folder) or folder.name.startswith("PROF_")
                      or any(classify(f, modules) for f in _files(folder))):
        return [folder]
    if any(_is_rank_dir(d) or d.name.startswith("PROF_") for d in _dirs(folder)):
        return [folder] if depth > 0 else []
    if depth >= MAX_SEARCH_DEPTH:
        return []
    return [c for d in _dirs(folder) for c in _candidates(d, modules, depth + 1)]


def _node_folders(path: Path, holders: List[Path],
                  modules: List[ModuleType]) -> Tuple[Optional[Discovery], str]:
    """The profiles found below ``path`` (``holders``) when they are folders of rank folders side
    by side (in one folder), as a job run on several machines is gathered (one folder per node): one job when
    every rank states its id and no id is stated twice. Otherwise (the runs of one job, each with
    its rank 0; ranks without an id) None and why: they are separate profiles, and the user picks one."""
    if (len(holders) < 2 or len({h.parent for h in holders}) > 1
            or not all(any(_is_rank_dir(d) for d in _dirs(h)) for h in holders)):
        return None, ""
    per_node = [[_rank_source(d, modules) for d in _dirs(h) if _is_rank_dir(d)] for h in holders]
    sources = [s for node in per_node for s in node]
    unnamed = [s for s in sources if s.rank is None]
    if unnamed:
        return None, f"{unnamed[0].root.relative_to(path)} states no rank id"
    first: Dict[int, Path] = {}
    for s in sources:
        if s.rank in first:
            where = f"{first[s.rank].relative_to(path)} and {s.root.relative_to(path)}"
            return None, f"rank {s.rank} is in both {where}"
        first[s.rank] = s.root
    ranks, unparsed = _unparsed(sources)
    around = [p for h in holders for p in _around_ranks(h, _dirs(h), modules, ranks)]
    # msprof-analyze run on one node's folder summed that node's ranks only: not the job's.
    partial = [(h / CLUSTER_DIR, NODE_CLUSTER) for h in holders if _is_dir(h / CLUSTER_DIR)]
    return Discovery(path, "cluster", ranks, problems=unparsed + _info_problems(ranks) + around + partial), ""


def _around_ranks(folder: Path, subdirs: List[Path], modules: List[ModuleType],
                  ranks: List[RankSource]) -> List[Tuple[Path, str]]:
    """What a folder of rank folders holds besides them, said: another profile's files or PROF_*
    folders, and rank folders one level below that are none of ``ranks`` (a rank folder gathered
    by a link into a folder beside the others is loaded, not below them)."""
    profs = [d for d in subdirs if d.name.startswith("PROF_")]
    beside = _beside(folder, modules) + [(d, f"{OTHER_PROFILE} the rank folders") for d in profs]
    loaded = {os.path.realpath(s.root) for s in ranks}
    below = _ranks_below([d for d in subdirs if d not in profs and d.name != CLUSTER_DIR])
    return beside + [(p, note) for p, note in below if os.path.realpath(p) not in loaded]


def _cluster_files(folder: Path) -> Dict[str, List[Path]]:
    """The cluster outputs in ``folder`` itself when it is a cluster_analysis_output folder, else in
    its cluster_analysis_output child."""
    where = folder if folder.name == CLUSTER_DIR else folder / CLUSTER_DIR
    if not _is_dir(where):
        return {}
    found: Dict[str, List[Path]] = {}
    modules = cluster_modules()
    for f in _files(where):
        kind = classify(f, modules)
        if kind:
            found.setdefault(kind, []).append(f)
    return found


def discover(path: Path) -> Discovery:
    path = Path(path)
    if not path.is_absolute():
        try:
            os.getcwd()
        except FileNotFoundError:  # removed since the shell entered it (a new run re-creating prof_out)
            raise ProfileError(f"{path}: the working folder no longer exists; cd into the folder as it is now, "
                               "or give the path from /") from None
    if path.name in ("", ".."):  # `.` or `..`: its name tells an output or PROF_ folder, so it needs one
        path = path.resolve()  # as the system resolves it: `link/..` is the link target's parent
    try:
        if path.is_dir():
            _listing(path)
    except OSError as e:
        raise ProfileError(f"{path}: cannot be read ({e.strerror or type(e).__name__})") from None
    unlisted: Dict[Path, str] = {}
    not_files: Dict[Path, str] = {}
    said: List[Tuple[Path, str]] = []
    tokens = _UNLISTED.set(unlisted), _REACHED.set({}), _NOT_FILES.set(not_files), _SAID.set(said)
    try:
        cluster = _cluster_files(path) if path.is_dir() else {}
        disc = _discover(path, bool(cluster))
    finally:
        for var, token in zip((_UNLISTED, _REACHED, _NOT_FILES, _SAID), tokens):
            var.reset(token)
    disc.cluster = cluster
    _unreadable(disc, unlisted)
    # A rank folder whose output folder is a file, and nothing else of it found: no rank loaded (its
    # files each said missing would hide the one cause), as where the folder cannot be read.
    empty = [s for s in disc.ranks if (s.root / OUTPUT_DIR, NOT_A_FOLDER) in s.left_out
             and not set(s.files) - {profiler_metadata.KIND}]
    disc.ranks = [s for s in disc.ranks if s not in empty]
    disc.problems += [x for s in empty for x in s.left_out]
    # Said of what is inside the path opened (a device_N opened alone: not of its sibling devices),
    # and of entries beside the files loaded (not of every folder looked into on the way).
    inside = [(p, note) for p, note in said if p == disc.path or disc.path in p.parents]
    beside = {f.parent for s in disc.ranks for fs in s.files.values() for f in fs} | {
        d for s in disc.ranks for d in (s.root, s.root / OUTPUT_DIR)} | {disc.path}
    disc.problems += [(p, _not_a_file(p, what, disc.layout)) for p, what in sorted(not_files.items())
                      if p.parent in beside]
    disc.problems += _unread_beside({f for s in disc.ranks for f in s.files.get("kineto", [])}, set(not_files))
    disc.problems += list(dict.fromkeys(x for s in disc.ranks for x in s.left_out)) + inside
    return disc


def _unread_beside(traces: set, said: set) -> List[Tuple[Path, str]]:
    """Entries beside the Kineto traces loaded, of a trace's ending, that could not be read (a file
    without permission, a pipe, a link to nothing): named as its maker liked, whether each is a
    trace neither its name nor its content tells, so the run may lack it. (The other profilers'
    files have fixed names: one that cannot be read is its loader's error.)"""
    out = []
    for folder in sorted({f.parent for f in traces}):
        for p in _entries(folder):
            if p in traces or p in said or not p.name.endswith((".json", ".json.gz")):
                continue
            if not _is_file(p):
                what = _what_instead(p)
                if what and what != "a folder":
                    out.append((p, f"{NOT_A_FILE}: {what}"))
                continue
            try:
                with open(p, "rb") as f:
                    f.read(1)
            except OSError as e:
                out.append((p, f"{UNKNOWN_UNREADABLE} ({e.strerror or type(e).__name__})"))
    return out


def _not_a_file(p: Path, what: str, layout: str) -> str:
    """The note on an entry under a profiler name that is not a file. A link to nothing under a
    rank (or, of msprof output, a PROF_) folder's name is one of the profile's folders gone; under
    the other kind's, it would have been another profile beside, not loaded in any case."""
    if not _folder_named(p):
        return f"{NOT_A_FILE}: {what}"
    if p.name.startswith("PROF_") == (layout == "msprof"):
        return f"{FOLDER_GONE}: {what}"
    return f"{NOT_SEARCHED}: it is {what}"


def _unreadable(disc: Discovery, unlisted: Dict[Path, str]) -> None:
    """Folders that could not be listed. One a rank is read from (its own folder or output folder,
    msprof's PROF_*, device_N and export folders) is an error, the run incomplete, and a rank
    whose folder or output folder it is is left out, as a file that gave nothing is. Any other
    folder was merely not searched: a warning."""
    hidden = [s for s in disc.ranks if s.root in unlisted or s.root / OUTPUT_DIR in unlisted]
    roots = {s.root for s in disc.ranks}
    disc.ranks = [s for s in disc.ranks if s not in hidden]
    disc.problems = [(p, note) for p, note in disc.problems if p not in {s.root for s in hidden}]
    for folder, why in sorted(unlisted.items()):
        part = (folder in roots or folder.name in (OUTPUT_DIR, "mindstudio_profiler_output")
                or folder.name.startswith("PROF_") or bool(MSPROF_DEVICE_RE.match(folder.name))
                or (folder.name in ("timeline", "summary") and bool(MSPROF_DEVICE_RE.match(folder.parent.name))))
        disc.problems.append((folder, f"folder cannot be read: {why}" if part else
                              f"{NOT_SEARCHED}: it cannot be read ({why})"))


# Said of the profiler files beside one opened alone (a warning: the user chose the one file, and
# may not know that its folder gives more, memory records or communication, than it does).
BESIDE_ONE = "opened alone:"


def _beside_one(path: Path, modules: List[ModuleType]) -> List[Tuple[Path, str]]:
    """The profiler files beside ``path`` (by their names: none is read), said as not loaded."""
    try:
        others = [f.name for f in _listing(path.parent)
                  if f != path and kind_by_name(f.name, modules) and _is_file(f)]
    except OSError:
        return []
    if not others:
        return []
    more = f" and {len(others) - 3} more" if len(others) > 3 else ""
    return [(path.parent, f"{BESIDE_ONE} {len(others)} other profiler file{'s' if len(others) > 1 else ''} beside "
                          f"{path.name} ({', '.join(others[:3])}{more}) not loaded; open the folder to load them")]


def _discover(path: Path, cluster: bool) -> Discovery:
    modules = source_modules()
    if not path.exists():
        raise ProfileError(f"{path}: no such file or folder")
    if not path.is_dir() and not _is_file(path):
        raise ProfileError(f"{path}: {_what_instead(path) or 'not a file'}, not a profiler file or folder")
    if _is_file(path):
        kind = classify(path, modules)
        if kind is None and path.name.endswith(ARCHIVES):
            raise ProfileError(f"{path}: an archive; extract it (tar xf, unzip) and open the folder it gives")
        if kind is None:
            raise ProfileError(f"{path}: not a profiler file npu-tui knows")
        source = RankSource(root=path.parent, source_format=_format({kind}), files={kind: [path]})
        # The rank its files say, as where its folder is opened (else the rank is 0, whichever the file is).
        problem = _rank_above(path.parent, source)
        if source.rank is None:
            source.rank = _trace_rank(path) if kind == "kineto" else db_rank(path)
        return Discovery(path, "file", [source], problems=([problem] if problem else []) + _beside_one(path, modules))

    # A rank's output folder is that rank: its rank id, settings and parse state are beside it.
    rank_dir = path.parent if path.name == OUTPUT_DIR and _is_rank_dir(path.parent) else path
    if _is_rank_dir(rank_dir):
        ranks, unparsed = _unparsed([_rank_source(rank_dir, modules)])
        return Discovery(path, "rank", ranks, problems=unparsed + _info_problems(ranks) + _ranks_below([rank_dir]))
    if path.name.startswith("PROF_"):
        return Discovery(path, "msprof", _msprof_sources(path, modules))

    subdirs = _dirs(path)
    rank_dirs = [d for d in subdirs if _is_rank_dir(d)]
    profs = [d for d in subdirs if d.name.startswith("PROF_")]
    if rank_dirs:
        ranks, copies = _copied_ranks([_rank_source(d, modules) for d in rank_dirs])
        ranks, unparsed = _unparsed(ranks)
        return Discovery(path, "cluster", ranks, problems=unparsed + copies + _info_problems(ranks)
                         + _files_as_folders(path) + _around_ranks(path, subdirs, modules, ranks))
    if profs:
        below = _ranks_below([d for d in subdirs if d not in profs and d.name != CLUSTER_DIR], prof=True)
        return Discovery(path, "msprof", [s for d in profs for s in _msprof_sources(d, modules)],
                         problems=_beside(path, modules, "the PROF_* folders") + _files_as_folders(path) + below)
    # (by its parent's own name: `device_0` or `../device_0` opened from a folder names none)
    if path.name.startswith("device_") and Path(os.path.abspath(path)).parent.name.startswith("PROF_"):
        # (one rank of the whole PROF folder, its merged output or db export, is this device's)
        sources = _msprof_sources(path.parent, modules)
        return Discovery(path, "msprof", [s for s in sources if s.root == path or (
            len(sources) == 1 and s.root == path.parent)])
    loose = _loose_sources(path, modules)
    if len(loose) == 1 and loose[0].source_format == "msprof":  # (device_N/timeline: device_N's rank)
        _rank_above(path, loose[0])
    if loose:
        # Traces of more ranks one folder down (each node's, gathered into a folder of its own):
        # not loaded, as they may be another run's, and said; the job looked whole without them.
        below = [(d, f"{FILES_BELOW}, not loaded") for d in subdirs if d.name != CLUSTER_DIR
                 and not _loops_back(d) and _holds_profile_files(d, modules)]
        return Discovery(path, "output", loose, problems=below)

    hint = _candidates(path, modules)
    nodes, apart = _node_folders(path, hint, modules)
    if nodes is not None:
        return nodes
    if cluster:  # msprof-analyze's outputs alone: the job seen through them
        return Discovery(path, "cluster_output", [])
    not_files = _NOT_FILES.get() or {}
    if not_files:
        named = "; ".join(f"{p.name} is {what}" for p, what in sorted(not_files.items())[:3])
        raise ProfileError(f"{path}: no profiler file here could be read ({named})")
    if hint:
        names = ", ".join(str(h) for h in hint[:5])
        more = f" and {len(hint) - 5} more" if len(hint) > 5 else ""
        why = f" (not one job: {apart})" if apart else ""
        raise ProfileError(f"{path}: no profile here; profiles were found under {names}{more}{why}", hint)
    archives = sorted(f.name for f in _files(path) if f.name.endswith(ARCHIVES))
    as_folders = [f.name for f, _ in _files_as_folders(path) if f.name not in archives]
    if as_folders and not archives:
        raise ProfileError(f"{path}: no profiler output found, but {', '.join(as_folders[:3])} "
                           f"{'is' if len(as_folders) == 1 else 'are'} {NOT_A_FOLDER}: if an archive (`file` says "
                           "which), extract it and open what it gives")
    if archives:
        one = len(archives) == 1
        raise ProfileError(f"{path}: no profiler output found, but {'an archive' if one else 'archives'} "
                           f"({', '.join(archives[:3])}): extract {'it' if one else 'them'} (tar xf, unzip) "
                           f"and open what {'it gives' if one else 'they give'}")
    raise ProfileError(f"{path}: no profiler output found (no *_ascend_pt or PROF_* folder in it or up to "
                       f"{MAX_SEARCH_DEPTH} levels below, nor a profiler's CSV, trace or db file)")
