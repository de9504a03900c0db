// Migration 0007 (frozen): idempotency_key_counts, the number of idempotency_keys rows each API key
// holds, kept by triggers on idempotency_keys, so the per-key record limit is read in O(1) instead of
// counted, and a release that does not know the table (the previous one, during a roll) keeps it
// exact all the same. On PostgreSQL the insert trigger's row lock on the key's count also serializes
// one API key's new records until commit, so concurrent creates cannot pass the limit together.
// Valid on SQLite and PostgreSQL; imports no app code.
import { type Kysely, PostgresAdapter, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('idempotency_key_counts')
    .addColumn('api_key_id', 'text', (column) => column.primaryKey())
    .addColumn('records', 'bigint', (column) => column.notNull())
    .execute()
  if (db.getExecutor().adapter instanceof PostgresAdapter) await postgresTriggers(db)
  else await sqliteTriggers(db)
  // After the triggers: on PostgreSQL, CREATE TRIGGER holds off every write to idempotency_keys
  // until this transaction commits, so the counts start exact even with instances serving.
  await sql`insert into idempotency_key_counts (api_key_id, records)
    select api_key_id, count(*) from idempotency_keys group by api_key_id`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`drop trigger idempotency_keys_counted_insert on idempotency_keys`.execute(db)
    await sql`drop trigger idempotency_keys_counted_delete on idempotency_keys`.execute(db)
    await sql`drop function idempotency_keys_count_insert()`.execute(db)
    await sql`drop function idempotency_keys_count_delete()`.execute(db)
  } else {
    await sql`drop trigger idempotency_keys_counted_insert`.execute(db)
    await sql`drop trigger idempotency_keys_counted_delete`.execute(db)
  }
  await db.schema.dropTable('idempotency_key_counts').execute()
}

// Row triggers: SQLite has one writer, so no lock order to keep. An upsert taking over an expired
// key updates its row: no insert trigger fires, and the count stays as it is.
async function sqliteTriggers(db: Kysely<any>): Promise<void> {
  await sql`create trigger idempotency_keys_counted_insert after insert on idempotency_keys begin
    insert into idempotency_key_counts (api_key_id, records) values (new.api_key_id, 1)
      on conflict (api_key_id) do update set records = records + 1;
  end`.execute(db)
  await sql`create trigger idempotency_keys_counted_delete after delete on idempotency_keys begin
    update idempotency_key_counts set records = records - 1 where api_key_id = old.api_key_id;
  end`.execute(db)
}

// A row trigger on insert (a create inserts one record); a statement trigger on delete that updates
// each API key's count once, in api_key_id order, so sweeps deleting many keys' records at once
// take the counts' row locks in one order and cannot deadlock each other.
async function postgresTriggers(db: Kysely<any>): Promise<void> {
  await sql`create function idempotency_keys_count_insert() returns trigger language plpgsql as $$
    begin
      insert into idempotency_key_counts (api_key_id, records) values (new.api_key_id, 1)
        on conflict (api_key_id) do update set records = idempotency_key_counts.records + 1;
      return null;
    end $$`.execute(db)
  await sql`create function idempotency_keys_count_delete() returns trigger language plpgsql as $$
    declare
      deleted record;
    begin
      for deleted in select api_key_id, count(*) as records from gone group by api_key_id order by api_key_id loop
        update idempotency_key_counts set records = records - deleted.records where api_key_id = deleted.api_key_id;
      end loop;
      return null;
    end $$`.execute(db)
  await sql`create trigger idempotency_keys_counted_insert after insert on idempotency_keys
    for each row execute function idempotency_keys_count_insert()`.execute(db)
  await sql`create trigger idempotency_keys_counted_delete after delete on idempotency_keys
    referencing old table as gone for each statement execute function idempotency_keys_count_delete()`.execute(db)
}
