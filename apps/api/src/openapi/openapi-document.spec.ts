import { wrapRefSiblings } from './openapi-document';

describe('wrapRefSiblings', () => {
  it('moves a $ref that has siblings into allOf, at any depth, keeping the siblings', () => {
    const doc = {
      components: {
        schemas: {
          A: { type: 'object', properties: { policy: { $ref: '#/components/schemas/P', description: 'd' }, plain: { $ref: '#/components/schemas/P' } } },
          B: { anyOf: [{ $ref: '#/components/schemas/P', nullable: true }, { type: 'string' }] },
        },
      },
    };
    expect(wrapRefSiblings(doc)).toEqual({
      components: {
        schemas: {
          A: { type: 'object', properties: { policy: { allOf: [{ $ref: '#/components/schemas/P' }], description: 'd' }, plain: { $ref: '#/components/schemas/P' } } },
          B: { anyOf: [{ allOf: [{ $ref: '#/components/schemas/P' }], nullable: true }, { type: 'string' }] },
        },
      },
    });
  });
});
