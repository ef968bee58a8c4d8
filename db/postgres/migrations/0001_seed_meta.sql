-- The revision counter starts where a fresh etcd does: at revision 1.
INSERT INTO "cca_meta" ("id", "revision", "compact_revision") VALUES (1, 1, 0) ON CONFLICT DO NOTHING;
--> statement-breakpoint
-- The counter row is rewritten by every write transaction: leave room for HOT updates
-- and let autovacuum visit it often, so it never bloats into a slow lock target.
ALTER TABLE "cca_meta" SET (fillfactor = 10, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);
