package responsediff

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"mime"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/wire"
)

// The expected differences between listwatch and client-go, by name. Any
// other difference fails the test, and so does an entry no case shows.

// reading is a response that listwatch reads in a way of its own, where
// client-go reads it otherwise. The test does not stop there: it rewrites
// the response into what listwatch reads it as, runs client-go on that,
// and compares everything as for any other case.
type reading struct {
	name string
	// why says why, citing where listwatch documents it.
	why string
	// rewrite returns c rewritten as listwatch reads it, or nil when the
	// reading does not apply or would change nothing.
	rewrite func(c *response, cg, lw outcome) *response
}

var readings = []reading{
	{
		name: "a Status whatever the Content-Type says",
		why: "internal/rest/response.go, CheckResponse: `A Status is read in protobuf when the Content-Type says " +
			"so or the body starts with k8s\\x00, else in JSON, whatever the Content-Type says`; client-go decodes " +
			"a body by its Content-Type, and makes a Status up for one it cannot decode so",
		rewrite: func(c *response, cg, lw outcome) *response {
			if !lw.written() || cg.written() || c.stream != nil {
				return nil
			}
			ct := ctJSON
			if bytes.HasPrefix(c.body, []byte("k8s\x00")) {
				ct = ctProtobuf
			}
			if mediaType(c) == strings.TrimSuffix(ct, "; charset=utf-8") {
				return nil
			}
			out := c.clone()
			out.header.Set("Content-Type", ct)
			return out
		},
	},
	{
		name: "a Status whatever its status field says",
		why: "internal/rest/response.go, CheckResponse: `whatever its status field says (client-go takes only a " +
			"Failure)`; client-go makes one up from the HTTP status for a Status whose status is Success, empty or other",
		rewrite: func(c *response, cg, lw outcome) *response {
			if !lw.written() || cg.written() || c.st == nil || c.st["status"] == "Failure" || c.code/100 == 2 {
				return nil
			}
			return c.withStatus(status{"status": "Failure"})
		},
	},
	{
		name: "a Status without a code",
		why: "internal/rest/errors.go, APIError.ErrStatus: `Status.Code is always set`: response.go, CheckResponse: " +
			"`given the HTTP status as its code if it has none`, and errors.go, FromStatus (a 2xx list body that is a " +
			"Status): `A Status without a code gets the code that its reason implies`; client-go leaves it 0",
		rewrite: func(c *response, cg, lw outcome) *response {
			if c.stream != nil {
				return nil // the next reading's
			}
			return withCode(c, lw)
		},
	},
	{
		name: "an ERROR event's Status without a code",
		why: "internal/rest/errors.go, FromStatus: `A Status without a code gets the code that its reason implies " +
			"(Expired → 410, Timeout → 504, ...; no reason, or one unknown, → 500)`; client-go leaves it 0",
		rewrite: func(c *response, cg, lw outcome) *response {
			if c.stream == nil {
				return nil
			}
			if k, ok := c.st["kind"].(string); ok && k != "Status" {
				return nil // another kind: a 500 of listwatch's own
			}
			return withCode(c, lw)
		},
	},
	{
		name: "an ERROR event's object is a Status unless it names another kind",
		why: "internal/wire/event.go, Event: `read as a Status unless it names another kind: its kind and its " +
			"apiVersion may be missing, and the apiVersion is not checked`; client-go's decoder fails on such an object " +
			"and makes up a 500 InternalError Status",
		rewrite: func(c *response, cg, lw outcome) *response {
			if c.stream == nil || c.st == nil || !lw.written() || cg.written() {
				return nil
			}
			if k, ok := c.st["kind"].(string); ok && k != "Status" {
				return nil // another kind, which listwatch reads as one
			}
			return c.withStatus(status{"kind": "Status", "apiVersion": "v1"})
		},
	},
	{
		name: "a YAML body as text",
		why: "internal/rest/response.go, CheckResponse: `a YAML body is not read (client-go reads one)`; " +
			"kube-apiserver never answers a list or a watch in YAML",
		rewrite: func(c *response, cg, lw outcome) *response {
			if mediaType(c) != "application/yaml" || lw.written() {
				return nil
			}
			out := c.clone()
			out.header.Set("Content-Type", ctText)
			return out
		},
	},
}

// difference is a field that listwatch reads otherwise than client-go, for
// reasons listwatch documents (or, named so, a client-go bug).
type difference struct {
	name string
	// why says why, citing where listwatch documents it.
	why string
	// fields are the compared fields it explains; "*" is all of them.
	fields []string
	// shows reports whether the case shows it.
	shows func(c *response, cg, lw outcome) bool
}

var differences = []difference{
	{
		name: "a made-up Status names the reason of a 410 or a 413",
		why: "internal/rest/errors.go, reasonForCode: `It names two that client-go's made-up Status leaves " +
			"Unknown: Gone and RequestEntityTooLarge`; apimachinery's IsGone and IsRequestEntityTooLargeError " +
			"hold either way",
		fields: []string{"reason"},
		shows: func(c *response, cg, lw outcome) bool {
			return cg.unexpected && lw.unexpected && cg.reason() == "" && (lw.code() == 410 || lw.code() == 413)
		},
	},
	{
		name:   "Retry-After as an HTTP date",
		why:    "internal/rest/errors.go, APIError.RetryAfter: `in seconds or as an HTTP date`; client-go reads seconds only",
		fields: []string{"wait", "SuggestsClientDelay"},
		shows: func(c *response, cg, lw outcome) bool {
			_, err := http.ParseTime(c.header.Get("Retry-After"))
			return err == nil
		},
	},
	{
		name: "Retry-After on any status",
		why: "internal/rest/errors.go, APIError.RetryAfter: `on any status`; client-go's REST client waits only " +
			"on a 429 or a 5xx (checkWait)",
		fields: []string{"wait"},
		shows: func(c *response, cg, lw outcome) bool {
			return c.code != 429 && c.code < 500 && c.header.Get("Retry-After") != ""
		},
	},
	{
		name: "retryAfterSeconds without a Retry-After header",
		why: "internal/rest/errors.go, APIError.RetryAfter: `else Status.Details.RetryAfterSeconds`; client-go's " +
			"REST client waits on the header only",
		fields: []string{"wait"},
		shows: func(c *response, cg, lw outcome) bool {
			s := lw.status
			return c.stream == nil && cg.wait == 0 && s != nil && s.Details != nil && int64(s.Details.RetryAfterSeconds) == lw.wait
		},
	},
	{
		name: "retryAfterSeconds in an ERROR event",
		why: "internal/rest/errors.go, FromStatus: `A positive Details.RetryAfterSeconds becomes RetryAfter`; " +
			"client-go's reflector, after an ERROR event, waits on its own backoff whatever the Status says",
		fields: []string{"wait"},
		shows: func(c *response, cg, lw outcome) bool {
			s := lw.status
			return c.stream != nil && cg.wait == 0 && s != nil && s.Details != nil && int64(s.Details.RetryAfterSeconds) == lw.wait
		},
	},
	{
		name: "an ERROR event whose object is not a Status",
		why: "internal/rest/errors.go, FromStatus: `A Status of another kind (the ERROR event's object was not a " +
			"Status) gives a 500 InternalError naming that kind`; client-go's reflector fails with an " +
			"UnexpectedObjectError, which carries no Status, for a kind its scheme knows, and its watch makes up a " +
			"500 InternalError Status for one it cannot decode",
		fields: []string{"code", "reason", "helpers"},
		shows: func(c *response, cg, lw outcome) bool {
			var unexpected *apierrors.UnexpectedObjectError
			return c.stream != nil && (errors.As(cg.err, &unexpected) || cg.unexpected) && lw.code() == 500 &&
				strings.Contains(lw.err.Error(), "ERROR event whose object is a")
		},
	},
	{
		name: "a malformed watch event",
		why: "internal/wire/errors.go: `None carries a Status: a malformed watch event is no answer from the " +
			"server`: Next fails with ErrMalformed, ErrUnknownEventType or ErrMissingObject; client-go's watch makes " +
			"up a 500 InternalError Status for it, as if the server had sent it in an ERROR event",
		fields: []string{"code", "reason", "helpers"},
		shows: func(c *response, cg, lw outcome) bool {
			return c.stream != nil && cg.unexpected && cg.code() == 500 && lw.status == nil &&
				(errors.Is(lw.err, wire.ErrMalformed) || errors.Is(lw.err, wire.ErrUnknownEventType) || errors.Is(lw.err, wire.ErrMissingObject))
		},
	},
	{
		name: "a watch stream cut inside an event",
		why: "internal/wire/json_watch.go, JSONWatchDecoder.Next: `io.ErrUnexpectedEOF for a stream cut inside " +
			"an event`, an error; client-go's watch ends as if the stream had ended cleanly",
		fields: []string{"error"},
		shows: func(c *response, cg, lw outcome) bool {
			return c.stream != nil && cg.err == nil && errors.Is(lw.err, io.ErrUnexpectedEOF)
		},
	},
	{
		name: "a 2xx status above 206",
		why: "internal/rest/response.go, CheckResponse: `nil for any 2xx response (client-go's REST client " +
			"refuses those above 206)`; listwatch reads the body as a list or a watch stream",
		fields: []string{"*"},
		shows:  func(c *response, cg, lw outcome) bool { return c.code > 206 && c.code < 300 },
	},
	{
		name: "a watch answered with a 2xx other than 200",
		why: "reflector/http.go, HTTPListerWatcher.Watch: `Any 2xx answer opens the stream (client-go's wants " +
			"200)`; the stream then ends or fails as its body says",
		fields: []string{"*"},
		shows:  func(c *response, cg, lw outcome) bool { return c.watch && c.code > 200 && c.code < 300 },
	},
	{
		name: "a 2xx answer to a list that is no list of the resource",
		why: "reflector/http.go, HTTPListerWatcher.List: `A 2xx body that is a Status or an object of another " +
			"kind is an error`; client-go's Result.Into reads a Success Status, or an object or list of another " +
			"kind, as an empty list, without an error",
		fields: []string{"error"},
		shows: func(c *response, cg, lw outcome) bool {
			return !c.watch && c.code/100 == 2 && cg.err == nil && lw.err != nil && !noItems(lw)
		},
	},
	{
		name: "a 2xx JSON list without an items key",
		why: "internal/wire/list_json.go, DecodeJSONList: `A body without an \"items\" key fails with " +
			"ErrMalformed`; client-go reads it ({} from a proxy) as an empty list, and its cache empties",
		fields: []string{"error"},
		shows: func(c *response, cg, lw outcome) bool {
			return !c.watch && c.code/100 == 2 && cg.err == nil && noItems(lw)
		},
	},
	{
		name: "a 2xx list in a Content-Type client-go has no decoder for",
		why: "reflector/http.go, HTTPListerWatcher.List: `read as protobuf when its Content-Type says so, else as " +
			"JSON whatever the Content-Type says`; client-go fails with \"serializer for ... doesn't exist\"",
		fields: []string{"error"},
		shows: func(c *response, cg, lw outcome) bool {
			return !c.watch && c.code/100 == 2 && lw.err == nil && cg.err != nil && strings.Contains(cg.err.Error(), "serializer for")
		},
	},
	{
		name: "a 2xx list body's keys in their own case",
		why: "internal/wire/list_json.go, DecodeJSONList: `a \"Kind\" is no kind` and `A body without an " +
			"\"items\" key fails with ErrMalformed`; client-go finds the kind in any case, and reads a Failure " +
			"Status, or fails to decode an object of another kind",
		fields: []string{"*"},
		shows: func(c *response, cg, lw outcome) bool {
			return !c.watch && c.code/100 == 2 && cg.err != nil && noItems(lw) && c.st != nil && c.st["Kind"] != nil
		},
	},
	{
		name: "a list of the resource's kind at another apiVersion",
		why: "reflector/http.go, HTTPListerWatcher.List: `The list's kind is checked, not its apiVersion: a " +
			"PodList is read as pods whatever apiVersion it names`; client-go's scheme refuses a kind it has not " +
			"registered at that version",
		fields: []string{"error"},
		shows: func(c *response, cg, lw outcome) bool {
			return !c.watch && c.code/100 == 2 && lw.err == nil && cg.err != nil &&
				strings.Contains(cg.err.Error(), "is registered for version")
		},
	},
	{
		name: "client-go bug: a pre-1.17 too-large message counts only with Details",
		why: "client-go's isTooLargeResourceVersionError (tools/cache/reflector.go) returns before it reads " +
			"the message when the Status has no Details, though kube-apiserver before 1.17 sent that message " +
			"without any; listwatch reads it (internal/rest/errors.go, IsTooLargeResourceVersion: `a Timeout " +
			"status whose message contains \"Too large resource version\" (before 1.17)`)",
		fields: []string{"too large"},
		shows: func(c *response, cg, lw outcome) bool {
			s := cg.status
			return lw.tooLarge && s != nil && s.Details == nil && strings.Contains(s.Message, "Too large resource version")
		},
	},
	{
		name: "a made-up Status keeps a body of any Content-Type",
		why: "internal/rest/response.go, CheckResponse: `whatever its Content-Type (client-go keeps a text/* body " +
			"only)`: a 504 whose body is \"Too large resource version\" says so as the made-up Status's cause; " +
			"client-go's cause says \"unknown\" unless the body is text",
		fields: []string{"too large"},
		shows: func(c *response, cg, lw outcome) bool {
			mt := mediaType(c)
			return cg.unexpected && lw.unexpected && c.header.Get("Content-Type") != "" && !strings.HasPrefix(mt, "text/")
		},
	},
	{
		name: "too large on any 504",
		why: "internal/rest/errors.go, IsTooLargeResourceVersion: `a Timeout status (reason Timeout, or code 504 " +
			"whatever its reason)`; apimachinery's IsTimeout, which client-go asks, takes the code only when the " +
			"reason is none it knows",
		fields: []string{"too large"},
		shows: func(c *response, cg, lw outcome) bool {
			return lw.code() == 504 && lw.reason() != metav1.StatusReasonTimeout
		},
	},
	{
		name: "any 410 relists",
		why: "internal/rest/errors.go, IsGone: `any 410 whatever its reason, or the reason Expired or Gone`; " +
			"client-go's isExpiredError takes the code only when the reason is none apimachinery knows",
		fields: []string{"relist"},
		shows: func(c *response, cg, lw outcome) bool {
			return lw.code() == 410 && lw.reason() != metav1.StatusReasonExpired && lw.reason() != metav1.StatusReasonGone
		},
	},
	{
		name: "retryable by the code",
		why: "internal/rest/errors.go, APIError.Retryable: `It goes by the code alone`; apimachinery's " +
			"IsTooManyRequests, on which client-go's reflector retries, also holds for the reason TooManyRequests under another code",
		fields: []string{"429 retryable"},
		shows: func(c *response, cg, lw outcome) bool {
			return cg.reason() == metav1.StatusReasonTooManyRequests && lw.code() != 429
		},
	},
	{
		name: "a Content-Type that does not parse",
		why: "internal/rest/response.go, CheckResponse: `whatever the Content-Type says`; client-go's REST " +
			"client answers a Content-Type it cannot parse with a 500 InternalError of its own",
		fields: []string{"*"},
		shows: func(c *response, cg, lw outcome) bool {
			ct := c.header.Get("Content-Type")
			_, _, err := mime.ParseMediaType(ct)
			return ct != "" && err != nil
		},
	},
}

// withCode returns c, whose Status has no code, with the code listwatch
// gave it, or nil.
func withCode(c *response, lw outcome) *response {
	if !lw.written() || c.st == nil || lw.code() == 0 {
		return nil
	}
	if code, ok := c.st["code"].(int); ok && code != 0 {
		return nil
	}
	return c.withStatus(status{"code": int(lw.code())})
}

// mediaType is c's Content-Type without its parameters.
func mediaType(c *response) string {
	mt, _, _ := mime.ParseMediaType(c.header.Get("Content-Type"))
	return mt
}

// clone returns a copy of c that may be changed.
func (c *response) clone() *response {
	out := *c
	out.header = c.header.Clone()
	if c.st != nil {
		out.st = maps.Clone(c.st)
	}
	return &out
}

// withStatus returns a copy of c whose Status has the fields of more,
// encoded again, or nil if that changes nothing.
func (c *response) withStatus(more status) *response {
	out := c.clone()
	out.payload = c.payload.with(c.st.with(more))
	if bytes.Equal(out.body, c.body) {
		return nil
	}
	return out
}

// rewrite applies every reading that applies to c, and returns the
// rewritten response with their names, or nil.
func rewrite(c *response, cg, lw outcome) (*response, []string) {
	var names []string
	cur := c
	for _, r := range readings {
		if out := r.rewrite(cur, cg, lw); out != nil {
			cur = out
			names = append(names, r.name)
		}
	}
	if cur == c {
		return nil, nil
	}
	return cur, names
}

// explain returns the expected difference that explains field differing
// in c, or nil.
func explain(c *response, cg, lw outcome, field string) *difference {
	for i := range differences {
		d := &differences[i]
		for _, f := range d.fields {
			if (f == field || f == "*") && d.shows(c, cg, lw) {
				return d
			}
		}
	}
	return nil
}

// checkDifferencesSeen fails when an expected difference never showed:
// the tables must not keep entries the cases do not need.
func (e *env) checkDifferencesSeen(t *testing.T) {
	t.Helper()
	var names []string
	for _, r := range readings {
		names = append(names, r.name)
	}
	for _, d := range differences {
		names = append(names, d.name)
	}
	for _, name := range names {
		if e.seen[name] == 0 {
			t.Errorf("expected difference %q never showed in %d cases; drop it or add a case that shows it", name, e.runs)
		} else {
			t.Logf("expected difference %q: %d", name, e.seen[name])
		}
	}
}

// noItems reports whether listwatch refused a JSON list body for having no
// "items" key.
func noItems(lw outcome) bool {
	return errors.Is(lw.err, wire.ErrMalformed) && strings.Contains(lw.err.Error(), `no "items" key`)
}
