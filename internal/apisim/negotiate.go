package apisim

import (
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	mediaJSON     = "application/json"
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
)

// format is the representation chosen for a response.
type format struct {
	proto   bool   // application/vnd.kubernetes.protobuf, else JSON
	partial bool   // metadata only: PartialObjectMetadata(List)
	metaV   string // partial: the meta.k8s.io version, "v1" or "v1beta1"
	// unservable: a watch asked for PartialObjectMetadataList. kube-apiserver
	// accepts it, then fails to encode the first frame and ends the stream.
	unservable bool
}

// metaAPIVersion returns the apiVersion of metadata-only objects.
func (f format) metaAPIVersion() string { return "meta.k8s.io/" + f.metaV }

// requestKind says what a response carries, for Accept negotiation.
type requestKind uint8

const (
	kindObject requestKind = iota // one object (get, create, update)
	kindList                      // a collection
	kindWatch                     // watch events
)

// acceptClause is one media range of an Accept header.
type acceptClause struct {
	media  string
	params map[string]string
	q      float64
}

func parseAccept(header string) []acceptClause {
	var out []acceptClause
	for part := range strings.SplitSeq(header, ",") {
		media, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if s, ok := params["q"]; ok {
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				q = f
			}
		}
		if q <= 0 {
			continue
		}
		out = append(out, acceptClause{media: media, params: params, q: q})
	}
	// Higher q first, and at equal q a specific type before a wildcard
	// (*/* or type/*), as kube-apiserver's negotiation ranks them.
	slices.SortStableFunc(out, func(a, b acceptClause) int {
		switch {
		case a.q > b.q:
			return -1
		case a.q < b.q:
			return 1
		}
		return wildcards(a.media) - wildcards(b.media)
	})
	return out
}

// wildcards counts the wildcards in a media range: 0 for type/subtype, 1
// for type/*, 2 for */*.
func wildcards(media string) int {
	typ, sub, _ := strings.Cut(media, "/")
	n := 0
	if typ == "*" {
		n++
	}
	if sub == "*" {
		n++
	}
	return n
}

// negotiate picks the response format for a request on c, the way
// kube-apiserver does: the first Accept clause the endpoint can serve wins.
// Custom resources serve protobuf only as PartialObjectMetadata; a clause
// asking for an unsupported transformation is skipped. No acceptable clause
// is a 406 NotAcceptable.
func negotiate(r *http.Request, c *collection, kind requestKind) (format, error) {
	header := r.Header.Get("Accept")
	if header == "" {
		return format{}, nil
	}
	for _, cl := range parseAccept(header) {
		var f format
		switch cl.media {
		case mediaJSON, "application/*", "*/*":
		case mediaProtobuf:
			f.proto = true
		default:
			continue
		}
		if as := cl.params["as"]; as != "" {
			if cl.params["g"] != "meta.k8s.io" || (cl.params["v"] != "v1" && cl.params["v"] != "v1beta1") {
				continue
			}
			f.metaV = cl.params["v"]
			switch {
			case as == "PartialObjectMetadata" && kind != kindList,
				as == "PartialObjectMetadataList" && kind == kindList:
				f.partial = true
			case as == "PartialObjectMetadataList" && kind == kindWatch:
				f.partial, f.unservable = true, true
			case as == "PartialObjectMetadata":
				return f, notAcceptable(fmt.Sprintf("you requested PartialObjectMetadata, but the requested object is a list (%s)", c.goTypeName(true)))
			case as == "PartialObjectMetadataList":
				return f, notAcceptable(fmt.Sprintf("you requested PartialObjectMetadataList, but the requested object is not a list (%s)", c.goTypeName(false)))
			default:
				continue // Table and other transformations are not simulated
			}
		}
		if f.proto && !f.partial && !c.res.Protobuf {
			continue // like a CRD: protobuf only for metadata-only responses
		}
		return f, nil
	}
	return format{}, notAcceptable("only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf")
}

// errorFormat picks how to encode a Status: the first JSON or protobuf
// clause that asks for no transformation, else JSON.
func errorFormat(r *http.Request) format {
	for _, cl := range parseAccept(r.Header.Get("Accept")) {
		if cl.params["as"] != "" {
			continue
		}
		switch cl.media {
		case mediaJSON, "application/*", "*/*":
			return format{}
		case mediaProtobuf:
			return format{proto: true}
		}
	}
	return format{}
}

func notAcceptable(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotAcceptable,
		Reason:  metav1.StatusReasonNotAcceptable,
		Message: msg,
	}}
}

// goTypeName names the Go type kube-apiserver prints in transformation
// errors: its internal type, in the package named after the API group.
func (c *collection) goTypeName(list bool) string {
	kind := c.res.Kind
	if list {
		kind = c.res.ListKind
	}
	switch {
	case c.typed == nil && list:
		return "*unstructured.UnstructuredList"
	case c.typed == nil:
		return "*unstructured.Unstructured"
	case c.res.Group == "":
		return "*core." + kind
	}
	pkg, _, _ := strings.Cut(c.res.Group, ".")
	return "*" + pkg + "." + kind
}
