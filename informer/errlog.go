package informer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/listwatch/listwatch/reflector"
)

// failureLog is how an informer without a watch error handler logs a run
// of list and watch failures: the first of each kind at once, then at most
// one record per failureLogEvery for that kind while the run lasts, with
// how many failures there were and for how long, at Error once the run has
// lasted failureEscalateAfter; and its end, at Info, when the server
// accepts a watch again (for a resource that is listed, not watched, when
// a list is stored). A reflector retries every 15 to 30 s at its
// backoff's maximum: logging each retry makes about 2.7 warnings a minute
// per informer, 8,000 an hour for a Factory of 50 while the apiserver is
// down, each saying the same thing. Kinds are remembered apart, so that
// two that alternate (a load balancer that refuses some retries and
// answers 503 to the others) are throttled too. Only list and watch
// failures make a run: an object skipped or not applied is logged on its
// own (logSkipped), and does not start a run that no accepted watch would
// end; a stalled stream neither (stallLog), as its watch is accepted again
// at once. A watch request that got no answer (reflector.ErrNoAnswer) is a
// failure: no stream was opened.
type failureLog struct {
	mu         sync.Mutex
	failures   int                  // since the last accepted watch
	since      time.Time            // when the first of them came
	logged     map[string]time.Time // kind → when it was last logged in this run; empty: none
	suppressed int                  // failures not logged since the last record
}

const (
	failureLogEvery      = 5 * time.Minute
	failureEscalateAfter = 5 * time.Minute
	routineFailuresQuiet = 2  // routine failures (410, a cut stream) in a row that log nothing
	maxFailureKinds      = 16 // kinds remembered in one run; the oldest is forgotten past it
)

// logFailure logs err, or counts it, as failureLog says.
func (s *SharedIndexInformer[T]) logFailure(err error) {
	if errors.Is(err, reflector.ErrSkipped) || errors.Is(err, reflector.ErrRejected) {
		s.logSkipped(err)
		return
	}
	if errors.Is(err, reflector.ErrStalled) && !errors.Is(err, reflector.ErrNoAnswer) {
		s.logStall(err)
		return
	}
	f := &s.failures
	now := time.Now()
	class := errorClass(err)
	f.mu.Lock()
	if f.failures == 0 {
		f.since = now
	}
	f.failures++
	last, seen := f.logged[class]
	var msg string
	switch {
	case isRoutine(err) && f.failures <= routineFailuresQuiet && len(f.logged) == 0:
		// The reflector's own recovery: a relist after 410, a resumed
		// watch after a cut stream. Debug only (the reflector logs it).
	case !seen:
		msg = "informer: list/watch failing; retrying with backoff"
	case now.Sub(last) >= failureLogEvery:
		msg = "informer: list/watch still failing; retrying with backoff"
	}
	if msg == "" {
		f.suppressed++
		f.mu.Unlock()
		return
	}
	level := slog.LevelWarn
	if now.Sub(f.since) >= failureEscalateAfter {
		level = slog.LevelError
	}
	failures, since, suppressed := f.failures, f.since, f.suppressed
	f.remember(class, now)
	f.suppressed = 0
	f.mu.Unlock()
	s.logger.Log(context.Background(), level, msg, "resource", s.name, "err", err,
		"failures", failures, "failingFor", now.Sub(since).Round(time.Second).String(),
		"notLogged", suppressed)
}

// stallLog is how an informer without a watch error handler logs the
// watch streams its watchdog closed (reflector.ErrStalled), which the
// reflector reopens at once. One such stall is routine: a connection that
// died without a word (a NAT or load balancer that forgot it). Stalls in a
// row with nothing delivered between them are not, and the client cannot
// tell which of two causes it meets: a proxy that drops bookmarks in front
// of a quiet resource (the cache is right), or one that accepts watches
// and forwards nothing (the cache is stale). So the first stall of a row
// logs nothing above Debug, the second a warning, then a reminder every
// failureLogEvery while the row lasts, at Error once it has lasted
// failureEscalateAfter. A stalled stream's watch is accepted again at
// once, which ends a run of failures (failureLog) but not a row of stalls:
// only a watch event delivered (a bookmark too: Reflector.WatchEvents) or
// a resourceVersion that moved (a relist) does, noticed at the next stall.
// A row's end is not logged: its reminders stop.
type stallLog struct {
	mu     sync.Mutex
	stalls int       // in a row with nothing delivered between them
	rv     string    // the cache's resourceVersion at the row's first stall
	events uint64    // the reflector's WatchEvents then
	since  time.Time // when that came
	logged time.Time // the row's last record; zero: none
}

// stallsQuiet is how many stalls in a row log nothing above Debug.
const stallsQuiet = 1

// logStall logs err, a stream the watchdog closed, as stallLog says.
func (s *SharedIndexInformer[T]) logStall(err error) {
	r := s.runningReflector()
	if r == nil { // not from a reflector: cannot happen
		return
	}
	rv, events := r.LastSyncResourceVersion(), r.WatchEvents()
	now := time.Now()
	l := &s.stalls
	l.mu.Lock()
	if l.stalls == 0 || rv != l.rv || events != l.events {
		l.stalls, l.rv, l.events, l.since, l.logged = 0, rv, events, now, time.Time{}
	}
	l.stalls++
	if l.stalls <= stallsQuiet || (!l.logged.IsZero() && now.Sub(l.logged) < failureLogEvery) {
		l.mu.Unlock()
		return
	}
	l.logged = now
	stalls, since := l.stalls, l.since
	l.mu.Unlock()
	level := slog.LevelWarn
	if now.Sub(since) >= failureEscalateAfter {
		level = slog.LevelError
	}
	s.logger.Log(context.Background(), level,
		"informer: watch streams keep stalling with nothing delivered; each is reopened",
		"resource", s.name, "err", err, "stalls", stalls, "resourceVersion", rv,
		"stallingFor", now.Sub(since).Round(time.Second).String())
}

// remember notes that class was logged at now, forgetting the kind logged
// longest ago when there are too many. f.mu is held.
func (f *failureLog) remember(class string, now time.Time) {
	if f.logged == nil {
		f.logged = map[string]time.Time{}
	}
	if _, ok := f.logged[class]; !ok && len(f.logged) >= maxFailureKinds {
		oldest := ""
		for c, at := range f.logged {
			if oldest == "" || at.Before(f.logged[oldest]) {
				oldest = c
			}
		}
		delete(f.logged, oldest)
	}
	f.logged[class] = now
}

// logSkipped logs an error about one object (skipped by the reflector, or
// not applied to the cache, or a resync that failed): not a failure of the
// list or watch, which goes on.
func (s *SharedIndexInformer[T]) logSkipped(err error) {
	s.logger.Warn("informer: an object was skipped", "resource", s.name, "err", err)
}

// recovered is called when the server accepts a watch after failures (or
// a list is stored, for a resource that is listed, not watched).
func (s *SharedIndexInformer[T]) recovered() {
	f := &s.failures
	now := time.Now()
	f.mu.Lock()
	failures, since, logged := f.failures, f.since, len(f.logged) > 0
	f.failures, f.since, f.logged, f.suppressed = 0, time.Time{}, nil, 0
	f.mu.Unlock()
	if logged {
		s.logger.Info("informer: list/watch recovered", "resource", s.name,
			"failures", failures, "after", now.Sub(since).Round(time.Second).String())
	}
}

// isRoutine reports the failures a reflector meets in normal operation and
// recovers from by itself: a resourceVersion compacted away (410), a
// stream cut (an apiserver restarting, a proxy).
func isRoutine(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// errorClass names the kind of err, so that a run of one kind logs once:
// the status code and reason of an apiserver's answer, "network" for a
// connection that failed, or the text without digits (a URL's random
// timeoutSeconds would make every one differ).
func errorClass(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return fmt.Sprintf("%d %s", st.Status().Code, st.Status().Reason)
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne):
		// By the innermost cause: connection refused, an unknown
		// certificate authority, a timeout.
		inner := err
		for u := errors.Unwrap(inner); u != nil; u = errors.Unwrap(inner) {
			inner = u
		}
		return "network: " + withoutDigits(inner.Error())
	case errors.Is(err, reflector.ErrMalformed):
		return "malformed"
	}
	return withoutDigits(err.Error())
}

func withoutDigits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}, s)
}
