package fakelw

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/apistatus"
	"github.com/listwatch/listwatch/internal/objkey"
	"github.com/listwatch/listwatch/reflector"
)

// List serves one page of a list. A first page is cut from the current
// state, or, with resourceVersionMatch Exact (or a resourceVersion and a
// limit without a match, the server's older rule), from the state at the
// resourceVersion, 410 Expired if Compact forgot it; the next pages, from
// the state the first one was cut from, as a server's are (the continue
// token names that state and the key the page before ended at). A
// continue token whose state the Source no longer keeps (after Compact or
// Restore) is 410 Expired, as a server's is once etcd compacted that
// state away, with kube-apiserver's message and, in the Status's
// metadata.continue, a token that goes on from the current state (an
// inconsistent list, as the server's). A list at resourceVersion "0" is
// one page whatever its limit, as kube-apiserver's watch cache serves it.
// A resourceVersion the Source has not reached is TooLarge; one that is not
// a number, a next page asked for with a resourceVersion (other than "0")
// or a resourceVersionMatch, or options the server's validation refuses,
// get the server's errors.
func (s *Source[T]) List(ctx context.Context, opts reflector.ListOptions, add func(T) error) (reflector.ListMeta, error) {
	return s.list(ctx, opts, add, nil)
}

// list is List of the objects match accepts (nil: all).
func (s *Source[T]) list(ctx context.Context, opts reflector.ListOptions, add func(T) error, match func(T) bool) (reflector.ListMeta, error) {
	s.Lists.Add(1)
	if opts.Continue == "" { // the next page of a list is no retry
		s.mu.Lock()
		rv := s.rv
		s.mu.Unlock()
		s.spin.AskedAt(ctx, rv)
	}
	s.mu.Lock()
	if len(s.listErrs) > 0 {
		err := s.listErrs[0]
		s.listErrs = s.listErrs[1:]
		s.mu.Unlock()
		return reflector.ListMeta{}, err
	}
	var (
		id    uint64
		after string
		snap  listSnapshot[T]
	)
	if opts.Continue == "" {
		err := checkListOptions(opts) // as the server, before the resourceVersion
		var rv uint64
		if err == nil {
			rv, err = s.parseRVLocked(opts.ResourceVersion, false)
		}
		exact := rv > 0 && (opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact ||
			opts.ResourceVersionMatch == "" && opts.Limit > 0)
		if err == nil && exact && rv < s.compact {
			err = apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
		}
		if err != nil {
			s.mu.Unlock()
			return reflector.ListMeta{}, err
		}
		if exact {
			snap = listSnapshot[T]{rv: rv, objs: s.stateAtLocked(rv)}
		} else {
			snap = listSnapshot[T]{rv: s.rv, objs: s.sortedLocked()}
		}
	} else {
		// As the server: its validation refuses a resourceVersionMatch
		// with a continue token, its storage a resourceVersion other than
		// "0" (the token names the state).
		err := checkListOptions(opts)
		if err == nil {
			id, after, err = parseContinue(opts.Continue)
		}
		if err == nil && opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			err = apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		if err != nil {
			s.mu.Unlock()
			return reflector.ListMeta{}, err
		}
		var ok bool
		if snap, ok = s.lists[id]; !ok {
			err := s.continueExpiredLocked(after)
			s.mu.Unlock()
			return reflector.ListMeta{}, err
		}
	}
	s.mu.Unlock()

	objs := snap.objs
	if after != "" {
		i, _ := slices.BinarySearchFunc(objs, after, func(o T, k string) int {
			return compare(objkey.Key(o), k)
		})
		for i < len(objs) && objkey.Key(objs[i]) <= after {
			i++
		}
		objs = objs[i:]
	}
	meta := reflector.ListMeta{ResourceVersion: strconv.FormatUint(snap.rv, 10)}
	limit := opts.Limit
	if opts.Continue == "" && opts.ResourceVersion == "0" {
		limit = 0 // kube-apiserver's watch cache ignores it: computeListLimit
	}
	page, more := cutPage(objs, limit, match)
	s.mu.Lock()
	switch {
	case more && id == 0: // a first page
		id = s.keepLocked(snap)
		fallthrough
	case more:
		meta.Continue = strconv.FormatUint(id, 10) + "/" + objkey.Key(page[len(page)-1])
	}
	s.mu.Unlock()
	for _, o := range page {
		if err := ctx.Err(); err != nil {
			return reflector.ListMeta{}, err
		}
		if err := add(o); err != nil {
			return reflector.ListMeta{}, err
		}
	}
	return meta, nil
}

// continueExpiredLocked is kube-apiserver's 410 for a continue token whose
// state is gone, with its message and a token that continues the list
// after the key after from the current state (an inconsistent list: what
// was written since its first page may show in it).
func (s *Source[T]) continueExpiredLocked(after string) error {
	id := s.keepLocked(listSnapshot[T]{rv: s.rv, objs: s.sortedLocked()})
	return apistatus.ContinueExpired(strconv.FormatUint(id, 10) + "/" + after)
}

// cutPage returns the first limit objects of objs that match accepts (nil:
// all), or all of them for limit 0, and whether any object, matching or
// not, follows a full page: as kube-apiserver's (its watch cache's and
// etcd's) lists do, a selective list may end with an empty page.
func cutPage[T reflector.Object](objs []T, limit int64, match func(T) bool) (page []T, more bool) {
	for _, o := range objs {
		if limit > 0 && int64(len(page)) == limit {
			return page, true
		}
		if match == nil || match(o) {
			page = append(page, o)
		}
	}
	return page, false
}

// keepLocked keeps snap for the next pages of its list and returns its id,
// forgetting the oldest list kept if there are too many.
func (s *Source[T]) keepLocked(snap listSnapshot[T]) uint64 {
	if len(s.lists) >= maxOpenLists {
		delete(s.lists, slices.Min(slices.Collect(maps.Keys(s.lists))))
	}
	if s.lists == nil {
		s.lists = map[uint64]listSnapshot[T]{}
	}
	s.listID++
	s.lists[s.listID] = snap
	return s.listID
}

// parseContinue splits a continue token made by list: the id of the list's
// snapshot, and the key its last page ended at.
func parseContinue(token string) (id uint64, after string, err error) {
	idText, after, ok := strings.Cut(token, "/")
	id, perr := strconv.ParseUint(idText, 10, 64)
	if !ok || perr != nil || id == 0 || after == "" {
		return 0, "", Status(http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf("malformed continue token %q", token))
	}
	return id, after, nil
}

// filter returns the objects match accepts (nil: all of them).
func filter[T reflector.Object](objs []T, match func(T) bool) []T {
	if match == nil {
		return objs
	}
	return slices.DeleteFunc(objs, func(o T) bool { return !match(o) })
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
