// @ts-check
/** The team's schedules or agent identities (the page's `data-list`), read-only. */
import { age, api, byId, h, messageOf, say, signedIn } from './api.js';

const status = byId('list-status');

/** @param {Record<string, Node | string>} cells */
const row = (cells) =>
  h('tr', {}, ...Object.entries(cells).map(([label, value]) => h('td', { 'data-label': label }, value)));

const LISTS = {
  schedules: {
    path: 'agent/schedules',
    field: 'schedules',
    /** @param {any} s */
    row: (s) =>
      row({
        Name: s.name,
        Cron: h('code', {}, s.cron_schedule),
        Enabled: s.enabled ? 'yes' : 'paused',
        'Next run': s.history?.next_run ?? '—',
        'Last ran': s.history?.last_ran ? age(s.history.last_ran) : '—',
      }),
  },
  agents: {
    path: 'agent/identities',
    field: 'agents',
    /** @param {any} a */
    row: (a) =>
      row({
        Name: a.name,
        Description: a.description ?? '',
        Harness: a.harness?.type ?? 'oz',
        Model: a.base_model ?? a.harness?.model_id ?? '',
        Created: age(a.created_at),
      }),
  },
};

async function load() {
  const name = document.body.dataset.list === 'agents' ? 'agents' : 'schedules';
  const list = LISTS[name];
  try {
    const page = await api(list.path);
    const items = page[list.field] ?? [];
    byId(name)
      .querySelector('tbody')
      .replaceChildren(...items.map(list.row));
    say(status, items.length ? `${items.length} ${name}` : `No ${name} yet.`);
  } catch (err) {
    say(status, `Could not read the ${name}: ${messageOf(err)}`, true);
  }
}

if (signedIn()) void load();
