// The types of the module the console serves at this path from the eventsource-parser package (api/console/console-assets.ts).
export * from 'eventsource-parser/stream';
