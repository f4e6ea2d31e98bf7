// Unit-test wiring for Nest services (immich's `newTestService`): the service under test is built with every constructor
// dependency replaced by a jest mock, read from the metadata Nest itself injects by. Imports nothing that opens a
// connection (no Prisma client, no Redis): a dependency's class is only walked for its method names, never constructed.
import 'reflect-metadata';
import { jest } from '@jest/globals';
import type { InjectionToken, Type } from '@nestjs/common';
import { PARAMTYPES_METADATA, SELF_DECLARED_DEPS_METADATA } from '@nestjs/common/constants';

/** A dependency with each of its methods a `jest.fn`. */
export type AutoMocked<T extends object> = jest.Mocked<T>;

export interface AutomockOptions {
  /**
   * On (the default), a method called without an implementation given by the test throws, naming itself: a test states
   * every call its service makes. Off, such a call returns undefined.
   */
  strict?: boolean;
}

function methodNames(Class: Type<unknown>): string[] {
  const names = new Set<string>();
  for (let proto = Class.prototype as object | null; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto) as object | null) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name === 'constructor') continue;
      // Getters are left alone: reading one would run the real class's code on a half-made object.
      const descriptor = Object.getOwnPropertyDescriptor(proto, name);
      if (descriptor && typeof descriptor.value === 'function') names.add(name);
    }
  }
  return [...names];
}

function mockFn(label: string, strict: boolean): jest.Mock {
  return strict
    ? jest.fn(() => {
        throw new Error(`${label} was called without a mock implementation: give it one in the test (mockResolvedValue, mockReturnValue...)`);
      })
    : jest.fn();
}

/** An object with a `jest.fn` for every method of `Class` (its prototype chain's); the class is never constructed. */
export function automock<T extends object>(Class: Type<T>, options: AutomockOptions = {}): AutoMocked<T> {
  const strict = options.strict ?? true;
  const mock: Record<string, jest.Mock> = {};
  for (const name of methodNames(Class)) mock[name] = mockFn(`${Class.name}.${name}`, strict);
  return mock as unknown as AutoMocked<T>;
}

/** For a dependency injected by a token (a logger, a config object): a `jest.fn` made on first use of each property, returning undefined. */
export function tokenMock<T extends object = Record<string, jest.Mock>>(): AutoMocked<T> {
  const made = new Map<PropertyKey, jest.Mock>();
  return new Proxy({} as AutoMocked<T>, {
    get(target, property) {
      if (property in target) return (target as Record<PropertyKey, unknown>)[property];
      // Not a thenable: `await mock` must not call a mock `then`.
      if (property === 'then' || typeof property === 'symbol') return undefined;
      if (!made.has(property)) made.set(property, jest.fn());
      return made.get(property);
    },
  });
}

export interface NewTestServiceOptions extends AutomockOptions {
  /** Real values for some dependencies (a config object, a pure collaborator), by their injection token. */
  provide?: ReadonlyArray<readonly [InjectionToken, unknown]>;
}

export interface TestServiceMocks {
  /** The mock (or provided value) the service got for a class dependency. */
  get<D extends object>(token: Type<D>): AutoMocked<D>;
  /** The mock (or provided value) the service got for a token (`@Inject(LOGGER)`). */
  get<D extends object = Record<string, jest.Mock>>(token: string | symbol): AutoMocked<D>;
}

export interface TestService<T> {
  /** The service under test. */
  sut: T;
  mocks: TestServiceMocks;
  /** The constructor's arguments, in order. */
  args: unknown[];
}

interface SelfDeclaredDep {
  index: number;
  param: InjectionToken | { forwardRef: () => InjectionToken };
}

function tokenName(token: InjectionToken): string {
  return typeof token === 'function' ? token.name : String(token);
}

/**
 * Builds `Service` as Nest would, each constructor dependency a mock: a class's methods are strict `jest.fn`s
 * (automock), a token's (`@Inject(LOGGER)`) a lenient proxy of `jest.fn`s, unless `provide` gives a real value.
 * Tokens come from the constructor's `design:paramtypes` and `@Inject` metadata, as Nest reads them.
 */
export function newTestService<T>(Service: Type<T>, options: NewTestServiceOptions = {}): TestService<T> {
  const types = (Reflect.getMetadata(PARAMTYPES_METADATA, Service) as unknown[] | undefined) ?? [];
  const declared = (Reflect.getMetadata(SELF_DECLARED_DEPS_METADATA, Service) as SelfDeclaredDep[] | undefined) ?? [];
  if (types.length < Service.length) {
    throw new Error(`newTestService(${Service.name}): no constructor metadata for its ${Service.length} parameters (is it @Injectable, compiled with decorator metadata?)`);
  }
  const provided = new Map<InjectionToken, unknown>(options.provide ?? []);
  const byToken = new Map<InjectionToken, unknown>();
  const args = types.map((type, index) => {
    const self = declared.find((d) => d.index === index)?.param;
    const token = self && typeof self === 'object' && 'forwardRef' in self ? self.forwardRef() : (self ?? (type as InjectionToken | undefined));
    if (token === undefined || token === Object) {
      throw new Error(`newTestService(${Service.name}): parameter ${index} has no injection token (an interface or a type-only import without @Inject)`);
    }
    if (!byToken.has(token)) {
      const value = provided.has(token) ? provided.get(token) : typeof token === 'function' ? automock(token as Type<object>, options) : tokenMock();
      byToken.set(token, value);
    }
    return byToken.get(token);
  });
  for (const token of provided.keys()) {
    if (!byToken.has(token)) throw new Error(`newTestService(${Service.name}): provided ${tokenName(token)} is not one of its dependencies`);
  }
  const sut = new Service(...args);
  const mocks: TestServiceMocks = {
    get: (token: InjectionToken) => {
      if (!byToken.has(token)) throw new Error(`newTestService(${Service.name}): ${tokenName(token)} is not one of its dependencies`);
      return byToken.get(token);
    },
  } as TestServiceMocks;
  return { sut, mocks, args };
}
