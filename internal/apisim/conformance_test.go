package apisim_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listwatch/listwatch/internal/apisim"
)

// The e2e suite records what a real kube-apiserver v1.37.2 answers to the
// requests listwatch makes, normalized, under internal/e2e/testdata/conformance.
// This test replays the answers that carry a Status (refusals, errors, ERROR
// events) against the simulator and compares them field by field, after
// the same normalization: status code, Content-Type, Retry-After, the
// Status object, the events and how the stream ends.

// goldenDir is where the e2e module keeps the recordings.
var goldenDir = filepath.Join("..", "e2e", "testdata", "conformance")

type golden struct {
	Case      string
	Exchanges []goldenExchange
}

type goldenExchange struct {
	Step    string
	Request struct {
		Method, Path, Accept string
	}
	Response struct {
		Status  int
		Headers map[string]string
		Body    any
		Events  []any
		End     string
	}
}

func loadGolden(t *testing.T, name string) golden {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(goldenDir, name+".json"))
	if errors.Is(err, os.ErrNotExist) {
		t.Fatalf("no recording %s in %s: all recordings are committed (the e2e suite writes them)", name, goldenDir)
	}
	require.NoError(t, err)
	var g golden
	require.NoError(t, json.Unmarshal(b, &g))
	return g
}

// Volatile parts of recorded answers, replaced the way the recorder does.
var (
	uuidRE   = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	numberRE = regexp.MustCompile(`\b\d+\b`)
)

func normalizeGolden(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			s, isString := x.(string)
			switch {
			case isString && s != "" && k == "resourceVersion":
				out[k] = "<rv>"
			case isString && s != "" && k == "uid":
				out[k] = "<uid>"
			case isString && s != "" && (k == "creationTimestamp" || k == "time"):
				out[k] = "<time>"
			case isString && s != "" && k == "continue":
				out[k] = "<continue>"
			case isString && k == "message":
				out[k] = numberRE.ReplaceAllString(uuidRE.ReplaceAllString(s, "<uid>"), "<n>")
			default:
				out[k] = normalizeGolden(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = normalizeGolden(x)
		}
		return out
	}
	return v
}

// conformanceServer is a simulator set up like the recording's namespace:
// three pods, a continue token, the current resourceVersion.
type conformanceServer struct {
	s     *apisim.Server
	ns    string
	rv    string
	token string
	alpha *corev1.Pod
}

func newConformanceServer(t *testing.T, ns string) *conformanceServer {
	t.Helper()
	s := start(t, apisim.WithTooLargeWait(20*time.Millisecond), apisim.WithBookmarkInterval(0))
	c := &conformanceServer{s: s, ns: ns}
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	for _, name := range []string{"alpha", "bravo", "charlie"} {
		p, err := pods.Create(apisim.MakePod(ns, name))
		require.NoError(t, err)
		if name == "alpha" {
			c.alpha = p
		}
	}
	fresh := c.alpha.DeepCopy()
	fresh.Labels["touched"] = "yes"
	_, err := pods.Update(fresh) // c.alpha is now stale
	require.NoError(t, err)
	c.rv = s.ResourceVersion()
	c.token = getList(t, s, "/api/v1/namespaces/"+ns+"/pods?limit=1").Metadata.Continue
	require.NotEmpty(t, c.token)
	return c
}

// bodies of the recorded writes, which the recordings do not keep.
func (c *conformanceServer) body(t *testing.T, step string) io.Reader {
	switch step {
	case "create a pod that exists":
		return jsonBody(t, apisim.MakePod(c.ns, "alpha"))
	case "update with a stale resourceVersion":
		return jsonBody(t, c.alpha)
	case "delete with a wrong uid precondition":
		return strings.NewReader(`{"preconditions":{"uid":"00000000-0000-4000-8000-000000000000"}}`)
	}
	return nil
}

// replay sends a recorded request and compares the answer with the
// recording.
func (c *conformanceServer) replay(t *testing.T, ex goldenExchange) {
	t.Helper()
	path := strings.NewReplacer("<rv>", c.rv, "<continue>", c.token, "<too-large>", "999999999").Replace(ex.Request.Path)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, ex.Request.Method, c.s.URL()+path, c.body(t, ex.Step))
	require.NoError(t, err)
	if ex.Request.Accept != "" {
		req.Header.Set("Accept", ex.Request.Accept)
	}
	resp, err := c.s.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	want := ex.Response
	assert.Equal(t, want.Status, resp.StatusCode, "status code")
	for _, h := range []string{"Content-Type", "Retry-After", "Cache-Control"} {
		assert.Equal(t, want.Headers[h], resp.Header.Get(h), "header %s", h)
	}
	if want.Events != nil || want.End != "" {
		c.compareStream(t, resp.Body, want.Events, want.End)
		return
	}
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	got := summarizeBody(t, resp.Header.Get("Content-Type"), body)
	if pb, ok := got.(protobufBody); ok {
		// A protobuf body is recorded as its envelope and its object.
		w, _ := want.Body.(map[string]any)
		assert.Equal(t, w["envelope"], pb.envelope, "protobuf envelope")
		assert.Equal(t, w["object"], pb.object, "protobuf object")
		return
	}
	assert.Equal(t, want.Body, got)
}

// protobufBody is a protobuf answer: the runtime.Unknown fields and the
// decoded Status, normalized as JSON.
type protobufBody struct {
	envelope map[string]any
	object   any
}

// compareStream reads a JSON watch until it ends, or until it sent as
// many events as recorded when the recording stopped reading.
func (c *conformanceServer) compareStream(t *testing.T, body io.Reader, want []any, end string) {
	t.Helper()
	r := bufio.NewReader(body)
	var got []any
	for end != "EOF" && len(got) < len(want) || end == "EOF" {
		line, err := r.ReadBytes('\n')
		if err == io.EOF && len(line) == 0 {
			break
		}
		require.NoError(t, err)
		var ev any
		require.NoError(t, json.Unmarshal(line, &ev))
		got = append(got, normalizeGolden(ev))
	}
	assert.Equal(t, want, got)
}

// summarizeBody normalizes a body the way the recorder did: JSON
// normalized, protobuf as a protobufBody, anything else as text.
func summarizeBody(t *testing.T, contentType string, body []byte) any {
	t.Helper()
	if !strings.HasPrefix(contentType, "application/vnd.kubernetes.protobuf") {
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			return string(body)
		}
		return normalizeGolden(v)
	}
	require.True(t, bytes.HasPrefix(body, []byte("k8s\x00")), "protobuf magic")
	var unk runtime.Unknown
	require.NoError(t, unk.Unmarshal(body[4:]))
	require.Equal(t, "Status", unk.Kind, "only Status bodies are replayed")
	var st metav1.Status
	require.NoError(t, st.Unmarshal(unk.Raw))
	obj, err := json.Marshal(&st)
	require.NoError(t, err)
	var objMap any
	require.NoError(t, json.Unmarshal(obj, &objMap))
	return protobufBody{
		envelope: map[string]any{"apiVersion": unk.APIVersion, "kind": unk.Kind,
			"contentEncoding": unk.ContentEncoding, "contentType": unk.ContentType},
		object: normalizeGolden(objMap),
	}
}

// namespaceOf returns the namespace in a recorded path.
func namespaceOf(path string) string {
	if _, rest, ok := strings.Cut(path, "/namespaces/"); ok {
		ns, _, _ := strings.Cut(rest, "/")
		return ns
	}
	return "default"
}

// notSimulated lists recorded steps whose cause the simulator does not
// model: authorization, namespace lifecycle, and bearer tokens (see
// TestBearerToken), or that need an etcd compaction the simulator cannot
// separate from the loss of the watch cache.
var notSimulated = map[string]bool{
	"create a pod in a namespace that does not exist":                         true,
	"list as a user without any role":                                         true,
	"watch as a user without any role":                                        true,
	"list with an unknown bearer token":                                       true,
	"after a restart: continue the compacted list":                            true,
	"continue a list whose resourceVersion was compacted":                     true,
	"LIST at the compacted resourceVersion, Exact":                            true,
	"LIST at the compacted resourceVersion, Exact, limit=1":                   true,
	"LIST at the compacted resourceVersion, no resourceVersionMatch, limit=1": true,
	"LIST at resourceVersion=1, Exact":                                        true,
}

// replayed reports whether a recorded exchange carries a Status: a refusal,
// or a stream of ERROR events.
func replayed(ex goldenExchange) bool {
	if notSimulated[ex.Step] || strings.Contains(ex.Step, "(read for") {
		return false
	}
	if ex.Response.Status != http.StatusOK {
		return true
	}
	for _, ev := range ex.Response.Events {
		if m, _ := ev.(map[string]any); m["type"] != "ERROR" {
			return false
		}
	}
	return len(ex.Response.Events) > 0
}

func TestConformanceWithRecordedAnswers(t *testing.T) {
	for _, name := range []string{"invalid-parameters", "errors", "too-large-rv-list", "too-large-rv-watch",
		"partial-metadata-list", "watch-initial-events", "protobuf-watch"} {
		t.Run(name, func(t *testing.T) {
			g := loadGolden(t, name)
			// One simulator per recording, its pods in the recording's first
			// namespace (others, like conf-no-such-namespace, stay empty).
			var c *conformanceServer
			n := 0
			for _, ex := range g.Exchanges {
				if !replayed(ex) {
					continue
				}
				if c == nil {
					c = newConformanceServer(t, namespaceOf(ex.Request.Path))
				}
				t.Run(ex.Step, func(t *testing.T) { c.replay(t, ex) })
				n++
			}
			assert.NotZero(t, n, "nothing replayed from %s", name)
		})
	}
}

// After a restart, kube-apiserver's new watch cache starts at the current
// resourceVersion: resuming from anything older is 410 Expired.
func TestConformanceWatchAfterRestart(t *testing.T) {
	g := loadGolden(t, "compaction-watchcache")
	c := newConformanceServer(t, "conf-compaction")
	// Other writes happen while a real apiserver restarts (leases,
	// endpoints): the RV moves past the last one the client saw.
	_, err := apisim.Of[*corev1.ConfigMap](c.s, apisim.ConfigMaps()).Create(apisim.MakeConfigMap("kube-system", "lease", 1))
	require.NoError(t, err)
	c.s.Restart()
	n := 0
	for _, ex := range g.Exchanges {
		if !strings.HasPrefix(ex.Step, "after a restart: WATCH") {
			continue
		}
		ex.Response.End = "EOF" // the ERROR event ends the stream
		t.Run(ex.Step, func(t *testing.T) { c.replay(t, ex) })
		n++
	}
	assert.Equal(t, 3, n)
}

// The recorded continue tokens decode to {"v","rv","start"} with start
// relative to the namespace and a leading slash.
func TestConformanceContinueTokenShape(t *testing.T) {
	c := newConformanceServer(t, "conf-paged-list")
	b, err := base64.RawURLEncoding.DecodeString(c.token)
	require.NoError(t, err)
	assert.JSONEq(t, `{"v":"meta.k8s.io/v1","rv":`+c.rv+`,"start":"/alpha\u0000"}`, string(b))
}
