package reflector_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/fakelw"
	"github.com/listwatch/listwatch/reflector"
)

// Credentials that expire during a long run (a token rotated, an exec
// plugin's token past its expiry): a run of five 401s on the watch, then
// accepted again. The cache is kept through the 401s (no relist: the
// watch is tried again from where it was), every 401 is reported, the
// retries back off (ten seconds later the five are not used up), and the
// cache catches up once the credentials are accepted.
func TestUnauthorizedThenAcceptedRecovers(t *testing.T) {
	for _, mode := range []reflector.Mode{reflector.Auto, reflector.ListWatch} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, store := newSource(), newRecorder()
				src.Create(pod("a"))
				var log errorLog
				r := reflector.New[*corev1.Pod](src, store, reflector.WithMode[*corev1.Pod](mode),
					reflector.WithErrorHandler[*corev1.Pod](log.add))
				defer run(t, r)()
				synctest.Wait()
				require.Equal(t, []string{"a@1"}, store.keys())
				lists := src.Lists.Load()

				unauthorized := make([]error, 5)
				for i := range unauthorized {
					unauthorized[i] = fakelw.Status(http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
				}
				src.FailWatch(unauthorized...)
				src.CloseWatches()
				src.Create(pod("b"))
				time.Sleep(10 * time.Second)
				synctest.Wait()
				assert.Equal(t, []string{"a@1"}, store.keys(), "the cache is kept while the watch is refused")
				time.Sleep(2 * time.Minute)
				synctest.Wait()
				assert.Equal(t, sourceKeys(src), store.keys(), "caught up once accepted")
				assert.Equal(t, lists, src.Lists.Load(), "no relist for a refused watch")
				n := 0
				for _, err := range log.all() {
					if strings.Contains(err.Error(), "401 Unauthorized") {
						n++
					}
				}
				assert.Equal(t, 5, n, "every 401 reported: %v", log.all())
			})
		})
	}
}
