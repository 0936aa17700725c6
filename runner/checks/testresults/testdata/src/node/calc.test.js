const test = require('node:test');
const assert = require('node:assert');

function add(a, b) { return a - b; }

test('add works', () => { assert.strictEqual(add(2, 3), 5); });
test('zero', () => { assert.strictEqual(add(0, 0), 0); });
test('skipped one', { skip: 'flaky on CI' }, () => {});
test('todo one', { todo: 'later' }, () => { throw new Error('nope'); });
test('suite of cases', async (t) => {
  await t.test('inner pass', () => {});
  await t.test('inner fail', () => { assert.strictEqual(add(1, 1), 2); });
  await t.test('deeper', async (t) => {
    await t.test('deepest', () => {});
  });
});
test('same name', () => {});
test('same name', () => {});
test('name with # hash and \\ backslash', () => {});
