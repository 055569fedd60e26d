package fakelw_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/fakelw"
	"github.com/listwatch/listwatch/reflector"
)

// page lists one page and returns it as "ns/name@rv" strings.
func page(t *testing.T, src *fakelw.Source[*corev1.Pod], opts reflector.ListOptions) ([]string, reflector.ListMeta, error) {
	t.Helper()
	var got []string
	meta, err := src.List(t.Context(), opts, func(p *corev1.Pod) error {
		got = append(got, p.Namespace+"/"+p.Name+"@"+p.ResourceVersion)
		return nil
	})
	return got, meta, err
}

// The pages of one list are cut from the state its first page was, as a
// server's are: the writes made between pages show in the watch from the
// list's resourceVersion, not in the next pages. Were they in both, a
// handler would see an object's state go back in time.
func TestPagesAreOneSnapshot(t *testing.T) {
	src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
	for _, name := range []string{"a", "b", "c"} {
		src.Create(labeled("ns", name, "web")) // 1, 2, 3
	}
	got, first, err := page(t, src, reflector.ListOptions{Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/a@1"}, got)
	src.Update(labeled("ns", "b", "db"))  // 4
	src.Delete("ns/c")                    // 5
	src.Create(labeled("ns", "d", "web")) // 6

	got, second, err := page(t, src, reflector.ListOptions{Limit: 1, Continue: first.Continue})
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/b@2"}, got)
	assert.Equal(t, "3", second.ResourceVersion, "every page says the first one's resourceVersion")
	got, last, err := page(t, src, reflector.ListOptions{Limit: 1, Continue: second.Continue})
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/c@3"}, got)
	assert.Empty(t, last.Continue)

	got, _, err = page(t, src, reflector.ListOptions{Limit: 1, Continue: second.Continue})
	require.NoError(t, err, "a last page asked for again")
	assert.Equal(t, []string{"ns/c@3"}, got)
	for _, token := range []string{"ns/b", "0/ns/b", "1/"} {
		_, _, err = page(t, src, reflector.ListOptions{Limit: 1, Continue: token})
		assert.True(t, apierrors.IsBadRequest(err), "%q is not a token of this Source: %v", token, err)
	}
}

// A Source keeps the states of the 64 newest paged lists under way: the
// next page of an older one is 410 Expired, as a list's whose state the
// server no longer has.
func TestOnlyTheNewestListsAreKept(t *testing.T) {
	src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
	src.Create(labeled("ns", "a", "web")) // 1
	src.Create(labeled("ns", "b", "web")) // 2
	var tokens []string
	for range 65 {
		_, meta, err := page(t, src, reflector.ListOptions{Limit: 1})
		require.NoError(t, err)
		tokens = append(tokens, meta.Continue)
	}
	for i, token := range tokens[1:] {
		got, _, err := page(t, src, reflector.ListOptions{Limit: 1, Continue: token})
		require.NoError(t, err, "list %d of the 64 newest", i+2)
		assert.Equal(t, []string{"ns/b@2"}, got)
	}
	_, _, err := page(t, src, reflector.ListOptions{Limit: 1, Continue: tokens[0]})
	assert.True(t, apierrors.IsResourceExpired(err), "the oldest of 65: %v", err)
}

// List stops at the first error add returns and returns it, and returns
// when its context ends, as a reflector.ListerWatcher must.
func TestListStopsAtAnAddErrorOrItsContextsEnd(t *testing.T) {
	src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
	src.Create(labeled("ns", "a", "web"))
	src.Create(labeled("ns", "b", "web"))
	full := errors.New("the store is full")
	adds := 0
	_, err := src.List(t.Context(), reflector.ListOptions{}, func(*corev1.Pod) error { adds++; return full })
	assert.ErrorIs(t, err, full)
	assert.Equal(t, 1, adds, "no add after the error")

	ctx, cancel := context.WithCancel(t.Context())
	adds = 0
	_, err = src.List(ctx, reflector.ListOptions{}, func(*corev1.Pod) error { adds++; cancel(); return nil })
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, adds, "no add after the context ended")
}

// Compact forgets the snapshots of the lists under way: their next pages
// are 410 Expired, as a server answers once etcd compacted their state.
func TestCompactExpiresContinueTokens(t *testing.T) {
	src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
	src.Create(labeled("ns", "a", "web"))
	src.Create(labeled("ns", "b", "web"))
	_, first, err := page(t, src, reflector.ListOptions{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, first.Continue)
	src.Compact()
	_, _, err = page(t, src, reflector.ListOptions{Limit: 1, Continue: first.Continue})
	assert.True(t, apierrors.IsResourceExpired(err), "%v", err)
}

// The 410 for an expired continue token is kube-apiserver's: its message,
// and a token that goes on with the list from the current state.
func TestExpiredContinueTokenOffersAnInconsistentOne(t *testing.T) {
	src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
	for _, name := range []string{"a", "b", "c"} {
		src.Create(labeled("ns", name, "web")) // 1, 2, 3
	}
	_, first, err := page(t, src, reflector.ListOptions{Limit: 1})
	require.NoError(t, err)
	src.Compact()
	src.Update(labeled("ns", "c", "db"))  // 4
	src.Create(labeled("ns", "d", "web")) // 5

	_, _, err = page(t, src, reflector.ListOptions{Limit: 1, Continue: first.Continue})
	require.True(t, apierrors.IsResourceExpired(err), "%v", err)
	var status apierrors.APIStatus
	require.ErrorAs(t, err, &status)
	assert.Equal(t, "The provided continue parameter is too old to display a consistent list result. "+
		"You can start a new list without the continue parameter, or use the continue token in this response to "+
		"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - "+
		"objects that were created, modified, or deleted between the time the first chunk was returned and now may "+
		"show up in the list.", status.Status().Message)
	inconsistent := status.Status().ListMeta.Continue
	require.NotEmpty(t, inconsistent)

	got, rest, err := page(t, src, reflector.ListOptions{Continue: inconsistent})
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/b@2", "ns/c@4", "ns/d@5"}, got, "after the first page, from the current state")
	assert.Equal(t, "5", rest.ResourceVersion)
}

// A list at an exact resourceVersion is the state at it, as kube-apiserver
// serves it (the recording conformance/compaction-watchcache.json): the
// changes after it undone, deletions included. Before, it was the current
// state, stamped with the newest resourceVersion. Compact forgets the
// states before it (410 Expired), and a resourceVersion and a limit
// without a match is the server's older rule for Exact.
func TestListAtAnExactResourceVersion(t *testing.T) {
	src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
	for _, name := range []string{"a", "b", "c"} {
		src.Create(labeled("ns", name, "web")) // 1, 2, 3
	}
	src.Update(labeled("ns", "b", "db"))  // 4
	src.Delete("ns/c")                    // 5
	src.Create(labeled("ns", "d", "web")) // 6
	src.Delete("ns/a")                    // 7

	exact := reflector.ListOptions{ResourceVersion: "3", ResourceVersionMatch: metav1.ResourceVersionMatchExact}
	got, meta, err := page(t, src, exact)
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/a@1", "ns/b@2", "ns/c@3"}, got)
	assert.Equal(t, "3", meta.ResourceVersion)

	got, meta, err = page(t, src, reflector.ListOptions{ResourceVersion: "5", Limit: 1})
	require.NoError(t, err, "the older rule")
	assert.Equal(t, []string{"ns/a@1"}, got)
	got, _, err = page(t, src, reflector.ListOptions{Continue: meta.Continue})
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/b@4"}, got, "the next page, of the same state")
	got, meta, err = page(t, src, reflector.ListOptions{ResourceVersion: "3"})
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/b@4", "ns/d@6"}, got, "without a limit or a match: NotOlderThan, the current state")
	assert.Equal(t, "7", meta.ResourceVersion)

	got, meta, err = page(t, src, reflector.ListOptions{ResourceVersion: "3", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/b@4", "ns/d@6"}, got, "NotOlderThan: the current state")
	assert.Equal(t, "7", meta.ResourceVersion)

	src.Compact()
	_, _, err = page(t, src, exact)
	assert.True(t, apierrors.IsResourceExpired(err), "after Compact: %v", err)
	got, _, err = page(t, src, reflector.ListOptions{ResourceVersion: "7", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	require.NoError(t, err, "the current state is kept")
	assert.Equal(t, []string{"ns/b@4", "ns/d@6"}, got)
}

// A resourceVersion that is not a number gets kube-apiserver's answers
// (the recording conformance/invalid-parameters.json): 400 to a list, 500
// with the field error to a watch or a streaming list; before, a list
// and a streaming list served the current state, and a watch got a 400
// of its own. Options the server's validation refuses are refused too.
func TestResourceVersionThatIsNotANumber(t *testing.T) {
	src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
	src.Create(labeled("ns", "a", "web"))
	field := `resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`

	_, _, err := page(t, src, reflector.ListOptions{ResourceVersion: "abc"})
	assert.True(t, apierrors.IsBadRequest(err), "list: %v", err)
	assert.EqualError(t, err, "invalid resource version: "+field)

	for _, opts := range []reflector.WatchOptions{
		{ResourceVersion: "abc"},
		{ResourceVersion: "abc", SendInitialEvents: true, AllowBookmarks: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
	} {
		_, err := src.Watch(t.Context(), opts)
		var st apierrors.APIStatus
		require.ErrorAs(t, err, &st, "watch %+v", opts)
		assert.Equal(t, int32(500), st.Status().Code)
		assert.EqualError(t, err, field)
	}

	for _, opts := range []reflector.ListOptions{
		{ResourceVersionMatch: metav1.ResourceVersionMatchExact},
		{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact},
		{ResourceVersion: "1", ResourceVersionMatch: "Newest"},
	} {
		_, _, err := page(t, src, opts)
		assert.True(t, apierrors.IsInvalid(err), "%+v: %v", opts, err)
	}
}

// A list at resourceVersion "0" is served whole, whatever its limit, as
// kube-apiserver's watch cache serves it (computeListLimit); other lists
// are paged, and so are their next pages asked for at "0" (the server
// serves a continue token from etcd, not from its watch cache).
func TestListAtZeroIgnoresTheLimit(t *testing.T) {
	src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
	src.Create(labeled("ns", "a", "web"))
	src.Create(labeled("ns", "b", "web"))
	src.Create(labeled("ns", "c", "web"))

	got, meta, err := page(t, src, reflector.ListOptions{ResourceVersion: "0", Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/a@1", "ns/b@2", "ns/c@3"}, got)
	assert.Empty(t, meta.Continue)

	got, meta, err = page(t, src, reflector.ListOptions{Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/a@1"}, got)
	assert.NotEmpty(t, meta.Continue)
	got, meta, err = page(t, src, reflector.ListOptions{ResourceVersion: "0", Limit: 1, Continue: meta.Continue})
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/b@2"}, got, "a next page at \"0\": paged")
	assert.NotEmpty(t, meta.Continue)
}

// The next page of a list is asked for with its continue token alone, as
// kube-apiserver's validation has it: a resourceVersionMatch with a
// continue token is Invalid ("resourceVersionMatch is forbidden when
// continue is provided"), and a resourceVersion other than "" or "0" a
// Bad Request ("specifying resource version is not allowed when using
// continue"; test/integration/apiserver's testListOptionsCase checks
// both). A Source used to serve the page, taking neither into account.
func TestContinueWithAResourceVersionIsRefused(t *testing.T) {
	src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
	src.Create(labeled("ns", "a", "web"))
	src.Create(labeled("ns", "b", "web"))
	_, first, err := page(t, src, reflector.ListOptions{Limit: 1})
	require.NoError(t, err)

	_, _, err = page(t, src, reflector.ListOptions{Limit: 1, Continue: first.Continue,
		ResourceVersion: "1", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	assert.True(t, apierrors.IsInvalid(err), "a resourceVersionMatch: %v", err)
	_, _, err = page(t, src, reflector.ListOptions{Limit: 1, Continue: first.Continue, ResourceVersion: "1"})
	assert.True(t, apierrors.IsBadRequest(err), "a resourceVersion: %v", err)
	got, _, err := page(t, src, reflector.ListOptions{Limit: 1, Continue: first.Continue, ResourceVersion: "0"})
	require.NoError(t, err, "resourceVersion \"0\" is let through")
	assert.Equal(t, []string{"ns/b@2"}, got)
}

// Watch options the server's validation refuses are refused, with its
// error: a streaming list must ask for a state not older than its
// resourceVersion, and only a streaming list may.
func TestWatchOptionsTheServerRefuses(t *testing.T) {
	src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
	for _, opts := range []reflector.WatchOptions{
		{SendInitialEvents: true, AllowBookmarks: true},
		{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
		{SendInitialEvents: true, ResourceVersionMatch: metav1.ResourceVersionMatchExact},
	} {
		_, err := src.Watch(t.Context(), opts)
		assert.True(t, apierrors.IsInvalid(err), "%+v: %v", opts, err)
	}
}
