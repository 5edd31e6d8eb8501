"""What the profile means: categories, stages, exposed comm, findings, the report. Imports duckdb only.

Public API::

    rules = load_rules(path=None)          # shipped rules.toml, or a user file (--rules)
    install_views(con, rules, apart)       # rules_* tables + every view below; idempotent
    ensure_views(con, rules, apart)        # the same, unless this analysis is installed already
                                           # (apart: {rank: why} left out of the comparisons)
    report = build_report(profile, rules)  # design.md §7 dict (+ stage_detection, cluster)
    render(report, "text" | "md" | "json")
    stand_ins(report)                      # ranks not loaded, compared by the cluster step trace
    VIEW_DESCRIPTIONS[name], view_sql(name)
    set_stage_windows(con, [(rank, stage, start_ns, end_ns)])   # override detection

Views (times: *_ns BIGINT, *_us DOUBLE; shares 0..1):

- kernel_classes: type, name, core + op, category, is_compute, is_comm, vae_sig, is_copy, once per
  distinct (type, name, core) of the kernels (stored: matching the rules' patterns is the costly part)
- kernel_categories: kernels.* + op (the name without its per-call suffix: the operator's identity),
  end_ns, category, is_compute, is_comm, vae_sig, is_copy
- stage_markers: rank, stage, name, own, host_start_ns, host_end_ns, start_ns, end_ns, kernels, mapped_by
  (accepted marker ranges, on ranks with a DiT or VAE marker; mapped_by flows | host_ops | launch_order)
- signature_scan: per compute kernel in time order: rank, part (its step; -2: the rank whole), step, unlike, ci,
  g (token), g1, t (its type), flags and running counts (ranks without overrides or markers only:
  the others never use signatures)
- stage_signature: rank, step, stage, start_ns, end_ns, confidence, forwards (kernel-signature
  windows: one per cycle of the denoising loop, one for its forwards before the cycles and one
  after, the VAE after it; confidence 0..1; forwards: a DiT window's, two for a cycle of two alike,
  unbatched guidance's)
- stage_windows_raw: rank, stage, start_ns, end_ns, method, confidence, forwards, win (the chosen
  detection; single: the whole rank as the default stage, All)
- kernel_stages: kernel_categories.* + win, stage, window_no
- stage_windows: rank, window_no, stage, start_ns, end_ns, start_us, end_us, wall_us, kernel_count,
  kernel_time_us, method, confidence, forwards
- stage_summary: rank, stage, start_us, end_us, wall_us, kernel_time_us, kernel_count, windows, method, confidence
- stage_categories: rank, stage, category, time_us, count, share
- top_operators: rank, stage, category, type, op, input_shapes, count, time_us, max_us, share, time_ns
- operator_types / operator_shapes / kernel_instances: the Operators pane's three levels
- kernel_names: the global find, each kernel name with its operator, count and total time
- operator_totals: op, type, category, count, total_us over every rank (what a diff pairs)
- busy_segments: rank, start_ns, end_ns, comm, compute (the union of comm / compute kernels)
- lane_segments: rank, start_ns, end_ns, computing, comm, not_overlapped, free (the overlap lanes)
- step_pieces: rank, step, stage, start_ns, end_ns (the piece of each step a stage holds: the step
  account's cut)
- comm_exposure: rank, stage, wall_us, comm_us, exposed_us (totals in the windows), steps,
  stage_us_per_step, comm_us_per_step, exposed_us_per_step, exposed_share (of the stage's time per
  step, warm-up steps left out), source, exposed_lanes_us, exposed_kernels_us
- step_windows: rank, step, start_ns, end_ns
- step_breakdown / step_breakdown_lanes / step_breakdown_kernels: rank, step, computing_us,
  comm_not_overlapped_us, overlapped_us, free_us, stage_us, bubble_us, step_us (stage + bubble), source
  (a rank not loaded: msprof-analyze's cluster step trace, source cluster_step_trace)
- rank_summary: rank, device_id, kernel_count, kernel_time_us, span_us, steps, step_time_us, exposed_comm_us,
  free_us, own_us (computing and free per step: the waits aside), step_source, apart (why the rank is not compared: ranks_apart; NULL when it is), compared,
  per ('step', or 'profile' where its profile numbers no steps)
- rank_spread: measure (step_time | own_time | exposed_comm), ranks, min_us, max_us, mean_us, spread, slow_rank (over
  the ranks rank_summary compares: with kernels or a step trace's steps, not apart)
- rank_times: the Ranks pane (rank_summary with format, level, vs_mean and slow by own time, from rank_spread)
- rank_operators: the Ranks drill-down, one rank's operators by type, identity and input shapes
- step_times: step, ranks, step_us (the slowest rank's), longest_rank
- stage_metrics: rank, stage, metric, category, value, time_us, basis_us
- findings: rule, rank, stage, metric, category, value, threshold, direction, docs, estimate, time_us,
  step_saving_us
- finding_operators: the operators behind each finding (its drill-down and its evidence)
- comm_op_times: rank, op_type, kind, source, ops, elapse_ms, transit_ms, wait_ms, sync_ms, idle_ms, wait_ratio,
  exposed_ms (the op's kernel time no compute covers; NULL for a rank without kernels or not loaded whole)
  (communication.json, else the kernels the rules call Comm)
- comm_links: reported_by, comm_group, src_rank, dst_rank (the job's; NULL for a rank not loaded),
  src_local, dst_local (within the group), transport, ops, size_mb, time_ms, gbps, median_gbps, slow
- link_bandwidth: rank, transport, size_mb, time_ms, bandwidth_gbps, part_of (SDMA: the total of HCCS, PCIE, SIO)

Macros: op_name(name) (operator identity), type_key(type) (the profiler's missing type as 'N/A').

Helper tables: rules_installed (fingerprint of the installed rules), rules_categories, rules_compute, rules_order, rules_stage_markers, rules_stages,
rules_findings (the rules file as rows), stage_overrides (windows set by hand), ranks_apart (the
ranks left out of the comparisons, and why, as install_views was given them).
"""

from .render import render, stand_ins
from .report import build_report
from .rules import Rules, load_rules
from .stages import set_stage_windows
from .views import VIEW_DESCRIPTIONS, VIEW_ORDER, ensure_views, install_views, view_sql

__all__ = ["Rules", "VIEW_DESCRIPTIONS", "VIEW_ORDER", "build_report", "ensure_views", "install_views",
           "load_rules", "render", "set_stage_windows", "stand_ins", "view_sql"]
