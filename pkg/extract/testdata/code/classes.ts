import { Injectable } from './di';

@Injectable()
export class Service<T extends Record<string, unknown>> extends Base<{ id: string }> implements Api {
  private readonly items: Map<string, T> = new Map();
  static count = 0;
  #secret = "}{";
  label = 'a;b';

  constructor(private http: Http, cache?: Cache) {
    super();
  }

  async load(id: string): Promise<T> {
    const text = `${id} } {`;
    return this.items.get(id) as T;
  }

  static create<U>(opts: { a: number }): Service<U> {
    return new Service();
  }

  get size(): number { return this.items.size; }
  set size(value: number) {}

  #hash(key: string) { return key; }
  static async *stream() {}
  protected abstract render(): void;

  @Log('x')
  public override toString(): string { return ''; }

  parse(input: string): T;
  parse(input: Buffer): T;
  parse(input: string | Buffer): T {
    return JSON.parse(String(input));
  }

  onClick = async (event: MouseEvent) => {
    this.handle({ x: 1 });
  };
  double = x => x * 2;
  legacy = function (a, b) {};
  notAMethod = (1 + 2);
  [Symbol.iterator]() {}
  'quoted name'() {}
}

export default class extends Service<{}> {
  hidden() {}
}

function outer() {
  class Inner {
    run() {}
  }
}

class Empty {}
