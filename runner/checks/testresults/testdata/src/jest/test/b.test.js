test.skip('skipped one', () => {});
test('adds', () => expect(2).toBe(2));
