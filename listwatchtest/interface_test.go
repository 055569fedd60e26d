package listwatchtest_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/listwatchtest"
	"github.com/listwatch/listwatch/reflector"
)

// A Source of an interface type (which no empty object, for a BOOKMARK,
// can be made of) ends its watches, by CloseWatches or at their timeout,
// without one: it panicked on the nil bookmark.
func TestSourceOfAnInterfaceTypeEndsWatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listwatchtest.NewSource[reflector.Object]()
		_, err := src.Create(pod("ns", "a"))
		require.NoError(t, err)

		inf := informer.New[reflector.Object](src)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- inf.Run(ctx) }()
		require.NoError(t, informer.WaitForSync(ctx, inf))

		src.CloseWatches()
		_, err = src.Create(pod("ns", "b"))
		require.NoError(t, err)
		time.Sleep(time.Hour) // the bubble's time: backoffs and watch timeouts pass
		synctest.Wait()
		_, ok := inf.Lister().Get("ns", "b")
		require.True(t, ok, "the informer watched again")

		cancel()
		require.NoError(t, <-done)
	})
}
