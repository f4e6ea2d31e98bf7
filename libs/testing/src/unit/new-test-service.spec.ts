import { Inject, Injectable, Optional } from '@nestjs/common';
import { automock, newTestService } from './new-test-service';

class Base {
  inherited(): string {
    return 'real';
  }
}

class Repository extends Base {
  readonly table = 'rows';

  find(id: string): Promise<string | null> {
    return Promise.resolve(id);
  }

  get connected(): boolean {
    throw new Error('a getter must not be read by automock');
  }
}

const CONFIG = Symbol('CONFIG');
const LOGGER = 'LOGGER';

@Injectable()
class Service {
  constructor(
    private readonly repository: Repository,
    @Inject(CONFIG) private readonly config: { limit: number },
    @Inject(LOGGER) private readonly logger: { warn(message: string): void },
    @Optional() private readonly again?: Repository,
  ) {}

  async name(id: string): Promise<string> {
    const found = await this.repository.find(id);
    if (!found) {
      this.logger.warn(`missing ${id}`);
      throw new Error('not found');
    }
    return found.slice(0, this.config.limit);
  }

  same(): boolean {
    return this.again === this.repository;
  }
}

describe('newTestService', () => {
  it("builds the service with a mock per dependency, found by the constructor's metadata", async () => {
    const { sut, mocks, args } = newTestService(Service, { provide: [[CONFIG, { limit: 3 }]] });
    const repository = mocks.get(Repository);
    repository.find.mockResolvedValue('abcdef');
    await expect(sut.name('x')).resolves.toBe('abc');
    expect(repository.find).toHaveBeenCalledWith('x');
    expect(args).toHaveLength(4);
    // One mock per token: both Repository parameters get the same one, as Nest would inject one instance.
    expect(sut.same()).toBe(true);
    expect(mocks.get(CONFIG)).toEqual({ limit: 3 });
  });

  it("mocks a token's dependency leniently: any method is a jest.fn returning undefined", async () => {
    const { sut, mocks } = newTestService(Service, { provide: [[CONFIG, { limit: 3 }]] });
    mocks.get(Repository).find.mockResolvedValue(null);
    await expect(sut.name('y')).rejects.toThrow('not found');
    expect(mocks.get(LOGGER).warn).toHaveBeenCalledWith('missing y');
  });

  it('a class mock is strict: a call the test gave no implementation fails, naming the method', async () => {
    const { sut } = newTestService(Service, { provide: [[CONFIG, { limit: 3 }]] });
    await expect(sut.name('z')).rejects.toThrow('Repository.find was called without a mock implementation');
  });

  it('strict: false gives mocks that return undefined', async () => {
    const { sut } = newTestService(Service, { provide: [[CONFIG, { limit: 3 }]], strict: false });
    await expect(sut.name('z')).rejects.toThrow('not found');
  });

  it('refuses a token that is not a dependency, when provided or asked for', () => {
    expect(() => newTestService(Service, { provide: [[Symbol('OTHER'), {}]] })).toThrow('is not one of its dependencies');
    const { mocks } = newTestService(Service);
    expect(() => mocks.get(Base)).toThrow('Base is not one of its dependencies');
  });
});

describe('automock', () => {
  it('mocks inherited methods too, leaves getters and fields alone, and never constructs the class', () => {
    const mock = automock(Repository);
    expect(Object.keys(mock).sort()).toEqual(['find', 'inherited']);
    expect(jest.isMockFunction(mock.inherited)).toBe(true);
  });
});
