package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	jsoniter "github.com/json-iterator/go"
	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	kjson "sigs.k8s.io/json"
)

// valueHolder has a field of each type valueTypes decodes, bare, behind a
// pointer, and inside containers.
type valueHolder struct {
	T   metav1.Time                  `json:"t"`
	PT  *metav1.Time                 `json:"pt"`
	MT  metav1.MicroTime             `json:"mt"`
	Q   resource.Quantity            `json:"q"`
	QM  map[string]resource.Quantity `json:"qm"`
	I   intstr.IntOrString           `json:"i"`
	PI  *intstr.IntOrString          `json:"pi"`
	M   map[string]string            `json:"m"`
	TS  []metav1.Time                `json:"ts"`
	Raw string                       `json:"raw"`
	// interface{} fields, as a type of one's own may have: integers stay
	// int64, as sigs.k8s.io/json keeps them.
	A  any            `json:"a"`
	AM map[string]any `json:"am"`
	AS []any          `json:"as"`
}

// The value decoders must agree with the types' own UnmarshalJSON, as
// sigs.k8s.io/json runs them: same value when that accepts the input, an
// error when it does not (this package may accept a little more: escapes
// inside quantities). With an intern table, each input is decoded twice:
// the second time strings and quantities come from the table.
func TestValueTypesMatchApimachinery(t *testing.T) {
	for _, in := range []string{
		`{"t":"2026-05-04T03:02:01Z","pt":"2026-05-04T05:02:01+02:00","mt":"2026-05-04T03:02:01.123456Z"}`,
		`{"t":null,"pt":null,"mt":null,"q":null,"i":null,"pi":null,"m":null,"ts":null}`,
		`{"t":"2026-05-04T03:02:01.5Z"}`,
		`{"t":"not a time"}`,
		`{"t":5}`,
		`{"t":"2026-05-04T03:02:01Z","mt":"2026-05-04T03:02:01Z"}`,
		`{"q":"100m","qm":{"cpu":"1.5","memory":" 128Mi ","n":3,"e":1e3}}`,
		`{"q":"1.0"}`,
		`{"q":"abc"}`,
		`{"q":true}`,
		`{"q":""}`,
		`{"q":-5}`,
		// null after a value clears the value and keeps the cached string
		`{"q":"1Gi","q":null}`,
		`{"q":"100m","q":null,"q":"2"}`,
		`{"i":"25%","pi":8080}`,
		`{"i":2147483648}`,
		`{"i":1.5}`,
		`{"i":true}`,
		`{"i":{}}`,
		`{"i":"a\"b\u00e9"}`,
		`{"m":{"a":"b","c":null,"":"e","a":"z"}}`,
		// a key given twice, then null: a string keeps its value
		`{"raw":"a","raw":null}`,
		`{"m":{"a":1}}`,
		`{"m":[]}`,
		`{"ts":["2026-05-04T03:02:01Z",null]}`,
		// strings with escapes, read by json-iterator rather than in place
		`{"t":"2026-05-04T03:02:01\u005a","pt":"2026-05-04T03:02:01\u005A"}`,
		`{"m":{"a\"b":"c\"d","e":"\u00e9","f":"\\","g":"tab\tnewline\n"}}`,
		`{"m":{"a":"b\u0000"}}`,
		// edge cases of RFC 3339: the lenient ones time.Parse takes
		`{"t":"2026-05-04T03:02:01,5Z"}`,
		`{"t":"2026-05-04T03:02:01+24:00"}`,
		`{"t":"2026-05-04T03:02:01.Z"}`,
		`{"t":"2026-05-04T03:02:01"}`,
		`{"q":"1e3","qm":{"a":"1e3","b":"1E3","c":"1Ki","d":"+1","e":"0.1"}}`,
		`{"q":"1Ei0"}`,
		`{"q":"99999999999999999999999999999Ei"}`,
		`{"a":9007199254740993,"am":{"i":3,"f":1.5,"e":1e3,"n":null,"s":"x","o":{"i":-9223372036854775808}},"as":[5,1.0,[],{}]}`,
		`{"a":{"big":99999999999999999999,"neg":-0}}`,
		`{"a":1e400}`,
	} {
		for name, table := range map[string]*internTable{"copied": nil, "interned": newInternTable()} {
			api := newJSONAPI(false, table, nil)
			for pass := range 2 {
				t.Run(fmt.Sprintf("%s/%s/%d", in, name, pass), func(t *testing.T) {
					var want, got valueHolder
					wantErr := kjson.UnmarshalCaseSensitivePreserveInts([]byte(in), &want)
					it := api.BorrowIterator([]byte(in))
					defer api.ReturnIterator(it)
					it.ReadVal(&got)
					gotErr := it.Error
					if (wantErr == nil) != (gotErr == nil) {
						t.Fatalf("apimachinery: %v; this package: %v", wantErr, gotErr)
					}
					if wantErr == nil {
						semanticEqual(t, got, want)
						if got.Q.String() != want.Q.String() || got.I != want.I {
							t.Fatalf("got %v %#v, want %v %#v", got.Q.String(), got.I, want.Q.String(), want.I)
						}
						if !got.T.Equal(&want.T) || got.T.Location() != want.T.Location() {
							t.Fatalf("time: got %v, want %v", got.T, want.T)
						}
					}
				})
			}
		}
	}
}

// tier decodes itself from text and refuses what it does not know, as an
// enum or a UUID of a type of one's own does.
type tier string

func (t *tier) UnmarshalText(b []byte) error {
	switch s := string(b); s {
	case "gold", "silver":
		*t = tier(s)
		return nil
	default:
		return fmt.Errorf("unknown tier %q", s)
	}
}

// level decodes itself from text and takes anything.
type level string

func (l *level) UnmarshalText(b []byte) error {
	*l = level("T:" + strings.ToUpper(string(b)))
	return nil
}

// userHolder has the fields a custom resource's Go type may have that no
// k8s.io/api type has.
type userHolder struct {
	Num   json.Number      `json:"num"`
	PNum  *json.Number     `json:"pnum"`
	Nums  []json.Number    `json:"nums"`
	Tier  tier             `json:"tier"`
	PTier *tier            `json:"ptier"`
	Level level            `json:"level"`
	Raw   json.RawMessage  `json:"raw"`
	Tiers map[string]level `json:"tiers"`
}

// A type of one's own decodes as sigs.k8s.io/json decodes it for
// client-go. Before, a json.Number took no number (it was read as a
// string), and null made json-iterator call UnmarshalText with "" (which
// tier refuses, and level turns into "T:") where encoding/json leaves the
// value as it was; either failed every list of a resource with such an
// object. A RawMessage given null is "null", as its UnmarshalJSON keeps
// it.
func TestUserTypesMatchApimachinery(t *testing.T) {
	for _, in := range []string{
		`{"num":3,"pnum":2.5,"nums":[1,-0.5,1e3]}`,
		`{"num":"42","pnum":"1e-3"}`,
		`{"num":"abc"}`,
		`{"num":""}`,
		`{"num":01}`,
		`{"num":true}`,
		`{"num":5,"num":null}`,
		`{"num":null,"pnum":null,"nums":[null,2]}`,
		`{"tier":"gold","ptier":"silver","level":"x"}`,
		`{"tier":null,"ptier":null}`,
		`{"tier":"gold","tier":null}`,
		`{"tier":"bronze"}`,
		`{"tier":5}`,
		`{"level":"x","level":null}`,
		`{"level":null}`,
		`{"tiers":{"a":"x","b":null}}`,
		`{"raw":null}`,
		`{"raw":{"a":[1,2]}}`,
		`{"raw":"s"}`,
	} {
		for name, api := range map[string]jsoniter.API{
			"copied":   newJSONAPI(false, nil, nil),
			"interned": newJSONAPI(false, newInternTable(), nil),
			"shared":   newJSONAPI(false, newInternTable(), newPartTable()),
		} {
			t.Run(in+"/"+name, func(t *testing.T) {
				var want, got userHolder
				wantErr := kjson.UnmarshalCaseSensitivePreserveInts([]byte(in), &want)
				it := api.BorrowIterator([]byte(in))
				defer api.ReturnIterator(it)
				it.ReadVal(&got)
				if (wantErr == nil) != (it.Error == nil) {
					t.Fatalf("apimachinery: %v; this package: %v", wantErr, it.Error)
				}
				if wantErr == nil && !reflect.DeepEqual(got, want) {
					t.Fatalf("got %+v, want %+v", got, want)
				}
			})
		}
	}
}

// Quantities whose text is a prefix of one another ("100m", "100",
// "10") each decode to their own value from JSON: the table of parsed
// quantities is keyed by the whole string.
func TestJSONQuantitiesThatArePrefixes(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	texts := []string{"100m", "100", "10", "1Gi", "1G", "1", "100m", "100"}
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	for i, s := range texts {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)}}
		p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s)}}}}
		list.Items = append(list.Items, p)
	}
	var got []*corev1.Pod
	_, err := DecodeJSONList(bytes.NewReader(jsonOf(t, list)), c, 0, func(p *corev1.Pod) error {
		got = append(got, p)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, got, len(texts))
	for i, s := range texts {
		q := got[i].Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]
		require.Equal(t, s, q.String(), "pod %d", i)
	}
}

// A quantity given as a bare JSON number is refused unless it is a JSON
// number: "-", "1.", "00", "-01.5" are not, and sigs.k8s.io/json refuses
// the object. (json-iterator's ReadNumber does not check the grammar; the
// decoder took "-" for 0.)
func TestJSONQuantityNumberFollowsTheGrammar(t *testing.T) {
	pods := mustCodec[*corev1.Pod](t, podGVK)
	for _, n := range []string{`-`, `1.`, `00`, `-01.5`} {
		obj := `{"kind":"Pod","apiVersion":"v1","spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":` + n + `}}}]}}`
		if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(obj), new(corev1.Pod)); err == nil {
			t.Fatalf("apimachinery accepts %s", n)
		}
		ev, err := NewJSONWatchDecoder(bytes.NewReader([]byte(`{"type":"ADDED","object":`+obj+`}`)), pods, 0).Next()
		if err == nil {
			cpu := ev.Object.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]
			t.Errorf("cpu %s: accepted as %s; apimachinery refuses the object", n, cpu.String())
		}
	}
}

// strict decodes itself from JSON and refuses anything but a string.
type strict string

func (s *strict) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '"' {
		return fmt.Errorf("want a string, got %s", b)
	}
	*s = strict(b)
	return nil
}

// The error of a type decoding its own JSON names that type, as
// json-iterator's decoders name theirs; it named unmarshalerDecoder.
func TestSelfDecodingTypeErrorNamesTheType(t *testing.T) {
	var got struct {
		S strict `json:"s"`
	}
	it := plainJSON.BorrowIterator([]byte(`{"s":1}`))
	defer plainJSON.ReturnIterator(it)
	it.ReadVal(&got)
	require.Error(t, it.Error)
	require.Contains(t, it.Error.Error(), "decode wire.strict: want a string, got 1")
}
