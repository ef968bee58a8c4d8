CREATE TABLE "cca_kv" (
	"key" text COLLATE "C" PRIMARY KEY NOT NULL,
	"value" text NOT NULL,
	"create_revision" bigint NOT NULL,
	"mod_revision" bigint NOT NULL,
	"version" bigint NOT NULL,
	"lease" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "cca_lease" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"ttl" bigint NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "cca_log" (
	"revision" bigint NOT NULL,
	"seq" integer NOT NULL,
	"key" text COLLATE "C" NOT NULL,
	"value" text NOT NULL,
	"deleted" boolean NOT NULL,
	"create_revision" bigint NOT NULL,
	"version" bigint NOT NULL,
	"lease" bigint NOT NULL,
	"prev_revision" bigint NOT NULL,
	CONSTRAINT "cca_log_revision_seq_pk" PRIMARY KEY("revision","seq")
);
--> statement-breakpoint
CREATE TABLE "cca_meta" (
	"id" smallint PRIMARY KEY NOT NULL,
	"revision" bigint NOT NULL,
	"compact_revision" bigint NOT NULL,
	CONSTRAINT "cca_meta_one_row" CHECK ("cca_meta"."id" = 1)
);
--> statement-breakpoint
CREATE INDEX "cca_kv_lease" ON "cca_kv" USING btree ("lease") WHERE "cca_kv"."lease" <> 0;--> statement-breakpoint
CREATE INDEX "cca_lease_expires_at" ON "cca_lease" USING btree ("expires_at");--> statement-breakpoint
CREATE UNIQUE INDEX "cca_log_key_revision" ON "cca_log" USING btree ("key","revision");