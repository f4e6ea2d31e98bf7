import { ValidationFailed } from '@compactor/compaction';
import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';
import { EMPTY_BODY_IS_EMPTY_OBJECT, ZodBodyPipe } from './zod-body';

const schema = z.strictObject({ name: z.string().min(1, 'must not be empty'), tags: z.array(z.string()).default([]) });
class RequiredBody extends createZodDto(schema) {}
class OptionalBody extends createZodDto(schema.partial({ name: true })) {
  static readonly [EMPTY_BODY_IS_EMPTY_OBJECT] = true;
}

function problemsOf(run: () => unknown): unknown {
  try {
    run();
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationFailed);
    return (e as ValidationFailed).details;
  }
  throw new Error('expected a ValidationFailed');
}

describe('ZodBodyPipe', () => {
  const pipe = new ZodBodyPipe();

  it('parses a createZodDto body with its schema (defaults applied)', () => {
    expect(pipe.transform({ name: 'a' }, { type: 'body', metatype: RequiredBody })).toEqual({ name: 'a', tags: [] });
  });

  it('throws the API 400 naming each bad field, as parseOrThrow does', () => {
    expect(problemsOf(() => pipe.transform({ name: '', tags: [1], extra: true }, { type: 'body', metatype: RequiredBody }))).toEqual({
      fields: [
        { field: 'name', message: 'must not be empty' },
        { field: 'tags[0]', message: 'Invalid input: expected string, received number' },
        { field: '(body)', message: 'Unrecognized key: "extra"' },
      ],
    });
  });

  it('refuses a missing body unless the DTO takes it as {}', () => {
    expect(problemsOf(() => pipe.transform(undefined, { type: 'body', metatype: RequiredBody }))).toEqual({
      fields: [{ field: '(body)', message: 'Invalid input: expected object, received undefined' }],
    });
    expect(pipe.transform(undefined, { type: 'body', metatype: OptionalBody })).toEqual({ tags: [] });
  });

  it('passes other parameters through', () => {
    expect(pipe.transform('s-1', { type: 'param', metatype: String, data: 'id' })).toBe('s-1');
    expect(pipe.transform({ x: 1 }, { type: 'body', metatype: Object })).toEqual({ x: 1 });
  });
});
