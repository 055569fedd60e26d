package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A golden file records one conformance case: what we asked the real
// apiserver and what it answered, with volatile values replaced by
// placeholders (see normalize), plus facts the test computed from the raw
// answers (relations between resource versions, decoded continue tokens)
// that placeholders would hide.
type golden struct {
	Case      string         `json:"case"`
	About     string         `json:"about"`
	Exchanges []exchange     `json:"exchanges"`
	Facts     map[string]any `json:"facts,omitempty"`
}

// exchange is one request and its answer.
type exchange struct {
	Step     string   `json:"step"`
	Request  request  `json:"request"`
	Response response `json:"response"`
}

type request struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Accept string `json:"accept,omitempty"`
}

type response struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    any               `json:"body,omitempty"`
	// Events of a watch whose status was 200, in order, and how reading
	// them ended (see watchStream.collect).
	Events []any  `json:"events,omitempty"`
	End    string `json:"end,omitempty"`
}

// recorder builds one golden file and, at the end of the test, compares
// it with the stored one (or rewrites it under -update).
type recorder struct {
	t *testing.T
	g golden
}

// newRecorder starts the record of case name, stored in
// testdata/conformance/<name>.json.
func newRecorder(t *testing.T, name, about string) *recorder {
	r := &recorder{t: t, g: golden{Case: name, About: about, Facts: map[string]any{}}}
	t.Cleanup(r.finish)
	return r
}

// recordedHeaders are the response headers worth recording; others
// (Date, Audit-Id, Content-Length...) vary between runs.
var recordedHeaders = []string{"Content-Type", "Cache-Control", "Retry-After", "Warning", "Content-Encoding"}

func pickHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	for _, k := range recordedHeaders {
		if v := h.Values(k); len(v) > 0 {
			out[k] = strings.Join(v, ", ")
		}
	}
	return out
}

// plain records a non-watch exchange made with api.do.
func (r *recorder) plain(step, method, path, accept string, res result) {
	r.g.Exchanges = append(r.g.Exchanges, exchange{
		Step:     step,
		Request:  request{Method: method, Path: normalizePath(path), Accept: accept},
		Response: response{Status: res.status, Headers: pickHeaders(res.header), Body: normalizeBody(res.header, res.body)},
	})
}

// watched records a watch exchange and the events read from it.
func (r *recorder) watched(step, path, accept string, w *watchStream, events []watchEvent, end string) {
	resp := response{Status: w.status, Headers: pickHeaders(w.header), End: end}
	if w.status != http.StatusOK {
		resp.Body = normalizeBody(w.header, w.body)
		resp.End = ""
	}
	for _, ev := range events {
		resp.Events = append(resp.Events, normalize(map[string]any{"type": ev.Type, "object": ev.Object}))
	}
	resp.Events = collapseBookmarks(resp.Events)
	r.g.Exchanges = append(r.g.Exchanges, exchange{
		Step:     step,
		Request:  request{Method: "GET", Path: normalizePath(path), Accept: accept},
		Response: resp,
	})
}

// custom records an exchange whose answer the test summarised itself
// (protobuf bodies).
func (r *recorder) custom(step, method, path, accept string, resp response) {
	resp.Events = collapseBookmarks(resp.Events)
	r.g.Exchanges = append(r.g.Exchanges, exchange{
		Step:     step,
		Request:  request{Method: method, Path: normalizePath(path), Accept: accept},
		Response: resp,
	})
}

// collapseBookmarks records a run of BOOKMARK events as its first event
// and those after it that say more than a resourceVersion: how many plain
// bookmarks the server sends in a row depends on timing. A watch near its
// timeout may get two; a streaming list may get a plain one right after
// the bookmark annotated k8s.io/initial-events-end, because until a watcher
// has queued a bookmark at or past the version it waits for, kube-apiserver's
// cacher schedules one for it every second, and two can be queued
// (nextBookmarkTime in the apiserver's cache_watcher.go).
func collapseBookmarks(events []any) []any {
	var out []any
	var last []byte
	lastWasBookmark := false
	for _, ev := range events {
		b, _ := json.Marshal(ev)
		isBookmark := false
		if m, ok := ev.(map[string]any); ok && m["type"] == "BOOKMARK" {
			isBookmark = true
			if lastWasBookmark && (bytes.Equal(b, last) || isPlainBookmark(m)) {
				continue
			}
		}
		out = append(out, ev)
		last, lastWasBookmark = b, isBookmark
	}
	return out
}

// isPlainBookmark reports whether a recorded BOOKMARK carries nothing in
// its metadata but a resourceVersion.
func isPlainBookmark(ev map[string]any) bool {
	obj, _ := ev["object"].(map[string]any)
	meta, _ := obj["metadata"].(map[string]any)
	for k := range meta {
		if k != "resourceVersion" {
			return false
		}
	}
	return true
}

// fact records something the test established from raw values.
func (r *recorder) fact(name string, value any) {
	if b, ok := value.(bool); ok && !b {
		// Every such fact is something the recording shows to be true:
		// false fails here, not only against a golden file that -update
		// would rewrite.
		r.t.Errorf("fact %q does not hold", name)
	}
	r.g.Facts[name] = value
}

// finish compares the record with the golden file, or writes it.
func (r *recorder) finish() {
	t := r.t
	if t.Failed() || t.Skipped() {
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep <rv> and & readable
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(r.g))
	got := buf.Bytes()
	path := filepath.Join("testdata", "conformance", r.g.Case+".json")
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden file; record it with: go test -run %s -update", t.Name())
	if !bytes.Equal(want, got) {
		t.Errorf("the real apiserver answered differently from %s (if that is expected, rerun with -update and review the diff):\n%s", path, diffLines(string(want), string(got)))
	}
}

// diffLines shows where two texts differ: the lines between their common
// beginning and end, with some context, each side cut to 30 lines.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	pre := 0
	for pre < len(w) && pre < len(g) && w[pre] == g[pre] {
		pre++
	}
	suf := 0
	for suf < len(w)-pre && suf < len(g)-pre && w[len(w)-1-suf] == g[len(g)-1-suf] {
		suf++
	}
	from := max(pre-4, 0)
	side := func(lines []string, sign string) string {
		var b strings.Builder
		mid := lines[pre : len(lines)-suf]
		cut := len(mid) > 30
		if cut {
			mid = mid[:30]
		}
		for _, l := range mid {
			b.WriteString(sign + l + "\n")
		}
		if cut {
			b.WriteString(sign + "...\n")
		}
		return b.String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "@@ line %d\n", pre+1)
	for _, l := range w[from:pre] {
		b.WriteString("  " + l + "\n")
	}
	b.WriteString(side(w, "- "))
	b.WriteString(side(g, "+ "))
	return b.String()
}

// normalizePath replaces volatile query values (resource versions other
// than "0", continue tokens) with placeholders.
func normalizePath(p string) string {
	u, err := url.Parse(p)
	if err != nil || u.RawQuery == "" {
		return p
	}
	q := u.Query()
	keys := slices.Sorted(maps.Keys(q))
	var parts []string
	for _, k := range keys {
		for _, v := range q[k] {
			switch {
			case k == "resourceVersion" && v == tooLargeRV:
				v = "<too-large>"
			case k == "resourceVersion" && v != "0" && v != "1" && digits.MatchString(v):
				v = "<rv>"
			case k == "continue" && isContinueToken(v):
				v = "<continue>"
			}
			parts = append(parts, k+"="+v)
		}
	}
	return u.Path + "?" + strings.Join(parts, "&")
}

// normalizeBody decodes a JSON body and normalizes it; a body that is not
// JSON is kept as text.
func normalizeBody(h http.Header, body []byte) any {
	if len(body) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return string(body)
	}
	return normalize(v)
}

// Patterns of volatile text inside messages: a uid, and a number standing
// alone (a resource version, a count), not digits inside a name.
var (
	uuid   = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	number = regexp.MustCompile(`\b\d+\b`)
	digits = regexp.MustCompile(`^\d+$`)
)

// isContinueToken reports whether s looks like kube-apiserver's continue
// token: unpadded base64url of a JSON object.
func isContinueToken(s string) bool {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && json.Valid(b) && len(b) > 0 && b[0] == '{'
}

// normalize replaces values that change between runs: resource versions,
// uids, timestamps, continue tokens, and numbers inside messages.
func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			s, isString := x.(string)
			switch {
			case isString && s != "" && (k == "resourceVersion"):
				out[k] = "<rv>"
			case isString && s != "" && k == "uid":
				out[k] = "<uid>"
			case isString && s != "" && (k == "creationTimestamp" || k == "deletionTimestamp" || k == "time"):
				out[k] = "<time>"
			case isString && s != "" && k == "continue":
				out[k] = "<continue>"
			case isString && k == "message":
				out[k] = number.ReplaceAllString(uuid.ReplaceAllString(s, "<uid>"), "<n>")
			default:
				out[k] = normalize(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = normalize(x)
		}
		return out
	default:
		return v
	}
}

// tooLargeRV is a resource version far beyond any this cluster reaches.
const tooLargeRV = "999999999"

// Timings measured by the conformance tests, written to
// testdata/conformance/timings.json under -update (merged with what is
// there, so a partial run keeps the others). They are not compared: the
// tests assert bounds instead.
var timings = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

// recordTiming notes a measured duration under name.
func recordTiming(t *testing.T, name string, d time.Duration) {
	t.Logf("timing %s: %v", name, d.Round(time.Millisecond))
	timings.Lock()
	defer timings.Unlock()
	timings.m[name] = d.Round(10 * time.Millisecond).String()
}

// recordNote notes a measurement that is not a duration under name.
func recordNote(t *testing.T, name, note string) {
	t.Logf("timing %s: %s", name, note)
	timings.Lock()
	defer timings.Unlock()
	timings.m[name] = note
}

func writeTimings() error {
	timings.Lock()
	defer timings.Unlock()
	if len(timings.m) == 0 {
		return nil
	}
	path := filepath.Join("testdata", "conformance", "timings.json")
	all := map[string]string{}
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &all)
	}
	maps.Copy(all, timings.m)
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func TestCollapseBookmarks(t *testing.T) {
	bookmark := func(annotated bool) any {
		meta := map[string]any{"resourceVersion": "<rv>"}
		if annotated {
			meta["annotations"] = map[string]any{initialEventsEnd: "true"}
		}
		return map[string]any{"type": "BOOKMARK", "object": map[string]any{"metadata": meta}}
	}
	added := map[string]any{"type": "ADDED", "object": map[string]any{"metadata": map[string]any{"name": "a"}}}
	for _, c := range []struct {
		name     string
		in, want []any
	}{
		{"a run of plain bookmarks", []any{bookmark(false), bookmark(false), bookmark(false)}, []any{bookmark(false)}},
		{"a plain bookmark after the annotated one", []any{added, bookmark(true), bookmark(false)}, []any{added, bookmark(true)}},
		{"the annotated bookmark after a plain one", []any{bookmark(false), bookmark(true)}, []any{bookmark(false), bookmark(true)}},
		{"bookmarks apart", []any{bookmark(false), added, bookmark(false)}, []any{bookmark(false), added, bookmark(false)}},
	} {
		require.Equal(t, c.want, collapseBookmarks(c.in), c.name)
	}
}
