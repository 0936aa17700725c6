test('adds', () => expect(1+1).toBe(2));
describe('grp', () => { it('inner', () => expect(1).toBe(2)); });
