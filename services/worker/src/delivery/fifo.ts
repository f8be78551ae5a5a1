/** A first-in first-out queue with O(1) take from the front (Array.shift is O(n)). */
export class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;
  get length() {
    return this.items.length - this.head;
  }
  push(item: T) {
    this.items.push(item);
  }
  peek(): T | undefined {
    return this.items[this.head];
  }
  shift(): T | undefined {
    const item = this.items[this.head];
    this.items[this.head] = undefined;
    this.head += 1;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}
