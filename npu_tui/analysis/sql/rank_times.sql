-- the Ranks pane: per rank its device, format (of a rank not loaded: 'cluster step trace', whose figures it gives), kernels, kernel time, span, mean step time, exposed comm, free time (memory copies in it, as the profiler's step trace counts them) and own time (computing and free) per step, own time against the mean of the ranks compared (those rank_spread compares, rank_summary.compared; NULL for the others), why it is apart, and whether it is rank_spread's slow rank (by own time: the waits aside)
SELECT s.rank, s.device_id,
       coalesce(r.source_format, CASE WHEN s.step_source = 'cluster_step_trace' THEN 'cluster step trace' END) AS source_format,
       r.profiler_level, s.kernel_count AS kernels,
       s.kernel_time_us, s.span_us, s.steps, s.step_time_us, s.exposed_comm_us, s.free_us, s.own_us,
       CASE WHEN s.compared
            THEN s.own_us / nullif(avg(s.own_us) FILTER (WHERE s.compared) OVER (), 0)
       END AS vs_mean, s.apart,
       coalesce(s.rank = (SELECT slow_rank FROM rank_spread WHERE measure = 'own_time'), false) AS slow
FROM rank_summary s
LEFT JOIN (SELECT rank, any_value(source_format) AS source_format, any_value(profiler_level) AS profiler_level
           FROM ranks GROUP BY rank) r USING (rank)
