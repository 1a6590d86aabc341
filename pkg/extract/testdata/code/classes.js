// Plain JavaScript classes, no semicolons.
class Counter extends EventEmitter {
  static #instances = 0
  count = 0

  constructor(start) {
    super()
    this.count = start
  }

  increment(by = 1) {
    this.count += by
    this.emit('change', { count: this.count })
  }

  get value() { return this.count }

  static
  from(other) { return new Counter(other.count) }

  async *[Symbol.asyncIterator]() {}
}

module.exports = Counter
