-- The Timeline's drawing table, built when the Timeline opens and again when its alignment changes:
-- timeline_spans on each rank's aligned clock (its time minus $offsets[rank]), colours as codes
-- (into timeline_cats) and sorted by time, so a redraw scans only the spans in view.
CREATE OR REPLACE TEMP TABLE timeline_draw AS
SELECT s.rank::USMALLINT AS rank, s.lane_no::USMALLINT AS lane_no, c.code::USMALLINT AS code,
       s.start_ns - o.offset_ns AS start_ns, s.end_ns - o.offset_ns AS end_ns
FROM timeline_text s
JOIN timeline_cats c USING (cat)
JOIN (SELECT unnest($ranks::INTEGER[]) AS rank, unnest($offsets::BIGINT[]) AS offset_ns) o USING (rank)
ORDER BY s.rank, s.start_ns
