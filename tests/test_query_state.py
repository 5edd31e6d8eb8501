"""History and saved queries live in the user's state directory and survive bad files."""

import json

from npu_tui.query import History, SavedQueries, state_dir


def test_state_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("NPU_TUI_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert state_dir() == tmp_path / "xdg" / "npu-tui"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert state_dir() == tmp_path / "home" / ".local" / "state" / "npu-tui"
    monkeypatch.setenv("NPU_TUI_STATE_DIR", str(tmp_path / "mine"))
    assert state_dir() == tmp_path / "mine"


def test_history_survives_a_restart_and_searches_newest_first(tmp_path, monkeypatch):
    monkeypatch.setenv("NPU_TUI_STATE_DIR", str(tmp_path))
    h = History()
    h.add("SELECT * FROM kernels", True, 10, 0.5)
    h.add("SELECT count(*) FROM comm_ops", False)
    h.add("select * from kernels  ", True, 12, 0.25)  # kept apart: case differs
    again = History()
    assert [e.sql for e in again.entries] == ["SELECT * FROM kernels",
                                              "SELECT count(*) FROM comm_ops",
                                              "select * from kernels"]
    assert [e.sql for e in again.search("KERNELS")] == ["select * from kernels",
                                                        "SELECT * FROM kernels"]
    assert again.entries[0].rows == 10 and again.entries[1].ok is False
    again.add("SELECT * FROM kernels", True)
    assert [e.sql for e in History().search("kernels")] == ["SELECT * FROM kernels",
                                                            "select * from kernels"]


def test_corrupt_history_is_set_aside_not_fatal(tmp_path, monkeypatch):
    monkeypatch.setenv("NPU_TUI_STATE_DIR", str(tmp_path))
    bad = tmp_path / "sql_history.jsonl"
    bad.write_text('{"sql": "SELECT 1", "at": 1, "ok": true, "rows": 1, "elapsed_s": 0}\n{oops\n')
    h = History()
    assert h.entries == [] and h.set_aside_to is not None
    assert h.set_aside_to.read_text().endswith("{oops\n") and not bad.exists()
    h.add("SELECT 2", True)
    assert [e.sql for e in History().entries] == ["SELECT 2"]


def test_saved_queries_persist_and_bad_files_are_set_aside(tmp_path, monkeypatch):
    monkeypatch.setenv("NPU_TUI_STATE_DIR", str(tmp_path))
    s = SavedQueries()
    s.save("matmul", "SELECT * FROM kernels WHERE type = 'MatMulV3'\n")
    s.save("steps", "FROM step_trace")
    s.delete("steps")
    assert SavedQueries().queries == {"matmul": "SELECT * FROM kernels WHERE type = 'MatMulV3'"}
    assert json.loads((tmp_path / "sql_saved.json").read_text()) == SavedQueries().queries
    (tmp_path / "sql_saved.json").write_text("[1, 2]")
    again = SavedQueries()
    assert again.queries == {} and again.set_aside_to.exists()
