const test = require('node:test');

test('first', () => {});
test('leaves', () => { process.exit(0); });
test('never runs', () => {});
