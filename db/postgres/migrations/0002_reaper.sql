CREATE TABLE "cca_reaper" (
	"id" smallint PRIMARY KEY NOT NULL,
	"last_reap_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "cca_reaper_one_row" CHECK ("cca_reaper"."id" = 1)
);

--> statement-breakpoint
INSERT INTO "cca_reaper" ("id", "last_reap_at") VALUES (1, clock_timestamp()) ON CONFLICT DO NOTHING;
