/** Anything that runs a query: a DataSource, an EntityManager, a pg Client. */
interface Queryable {
  query(sql: string): Promise<unknown>;
}

/** The cheapest question a database answers: whether it answers. */
export async function pingDatabase(db: Queryable): Promise<void> {
  await db.query('SELECT 1');
}

/** Subscribes a dedicated connection to a notification channel (db/run-event-reads.ts and db/webhook-deliveries.ts name theirs). */
export async function listenTo(client: Queryable, channel: string): Promise<void> {
  if (!/^[a-z_]+$/.test(channel)) throw new Error(`not a channel name: ${channel}`);
  await client.query(`LISTEN ${channel}`);
}
