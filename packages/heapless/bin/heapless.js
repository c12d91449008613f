#!/usr/bin/env node
// `npx heapless serve`, `npm install -g heapless`: the command of @heapless/actor under the name people type.
await import('@heapless/actor/cli');
