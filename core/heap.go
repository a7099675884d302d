package core

import "container/heap"

// indexedHeap is a min-heap whose items know their position, so that one can
// be moved or removed in O(log n). It serves the lease keeper (locks by
// due time) and ManualClock (timers by due time).
type indexedHeap[T any] struct {
	items []T
	less  func(a, b T) bool
	index func(T) *int // the item's position; -1 when not in the heap
}

func (h *indexedHeap[T]) push(x T)   { heap.Push((*heapAdapter[T])(h), x) }
func (h *indexedHeap[T]) pop() T     { return heap.Pop((*heapAdapter[T])(h)).(T) }
func (h *indexedHeap[T]) len() int   { return len(h.items) }
func (h *indexedHeap[T]) first() T   { return h.items[0] }
func (h *indexedHeap[T]) fix(x T)    { heap.Fix((*heapAdapter[T])(h), *h.index(x)) }
func (h *indexedHeap[T]) remove(x T) { heap.Remove((*heapAdapter[T])(h), *h.index(x)) }

// heapAdapter implements heap.Interface for indexedHeap, out of its API.
type heapAdapter[T any] indexedHeap[T]

func (h *heapAdapter[T]) Len() int           { return len(h.items) }
func (h *heapAdapter[T]) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *heapAdapter[T]) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	*h.index(h.items[i]), *h.index(h.items[j]) = i, j
}
func (h *heapAdapter[T]) Push(x any) {
	*h.index(x.(T)) = len(h.items)
	h.items = append(h.items, x.(T))
}
func (h *heapAdapter[T]) Pop() any {
	n := len(h.items) - 1
	x := h.items[n]
	var zero T
	h.items[n] = zero
	h.items = h.items[:n]
	*h.index(x) = -1
	return x
}
