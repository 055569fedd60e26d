package fakelw

import (
	"context"

	"github.com/listwatch/listwatch/reflector"
)

// Filtered returns a ListerWatcher of the objects match accepts, as a
// server serves a LIST or WATCH with a namespace or selectors: lists hold
// only those, and a watch tells an object that starts or stops matching
// as an ADDED or a DELETED (see watcher.send). Its requests count in
// Lists and Watches, and faults queued with FailList and FailWatch are
// served to it as to the Source.
func (s *Source[T]) Filtered(match func(T) bool) reflector.ListerWatcher[T] {
	return filtered[T]{s: s, match: match}
}

type filtered[T reflector.Object] struct {
	s     *Source[T]
	match func(T) bool
}

func (f filtered[T]) List(ctx context.Context, opts reflector.ListOptions, add func(T) error) (reflector.ListMeta, error) {
	return f.s.list(ctx, opts, add, f.match)
}

func (f filtered[T]) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[T], error) {
	return f.s.watch(ctx, opts, f.match)
}
