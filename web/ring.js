// A bounded ring: the newest `max` items, oldest first. What the console keeps per series for
// the session stays bounded however long the tab stays open.

export class Ring {
  constructor(max) {
    this.max = max;
    this.items = [];
  }

  push(item) {
    this.items.push(item);
    if (this.items.length > this.max) this.items.splice(0, this.items.length - this.max);
  }

  get last() {
    return this.items.at(-1);
  }

  get length() {
    return this.items.length;
  }
}
