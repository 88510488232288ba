package env

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// defaultAdvisorEtcdPrefix is virt-advisor-apiserver's --etcd-prefix default.
const defaultAdvisorEtcdPrefix = "/registry/advisor.kubevirt.io"

var embeddedEtcdURL = regexp.MustCompile(`"Embedded etcd serving".* url="([^"]+)"`)

// storage returns the etcd endpoint and key prefix the instance stores its
// objects under: --etcd-servers and --etcd-prefix, or the embedded etcd it
// reported in its log.
func (a *Advisor) storage() (endpoint, prefix string, err error) {
	prefix = defaultAdvisorEtcdPrefix
	for _, arg := range a.Args {
		switch {
		case strings.HasPrefix(arg, "--etcd-servers="):
			endpoint = strings.Split(strings.TrimPrefix(arg, "--etcd-servers="), ",")[0]
		case strings.HasPrefix(arg, "--etcd-prefix="):
			prefix = strings.TrimPrefix(arg, "--etcd-prefix=")
		}
	}
	if endpoint == "" {
		m := embeddedEtcdURL.FindStringSubmatch(a.LogTail(1 << 20))
		if m == nil {
			return "", "", fmt.Errorf("%s: no embedded etcd URL in its log", a.Name)
		}
		endpoint = m[1]
	}
	return endpoint, prefix, nil
}

// EditStoredConfig changes a VirtPlatformConfig where the instance stores
// it, in etcd, behind the server's back: what someone with access to the
// storage could do. edit receives the stored object (JSON) and changes it
// in place; the write is made only if nothing changed the key meanwhile.
func (a *Advisor) EditStoredConfig(ctx context.Context, name string, edit func(obj map[string]any) error) error {
	endpoint, prefix, err := a.storage()
	if err != nil {
		return err
	}
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Context: ctx})
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", endpoint, err)
	}
	defer client.Close()
	resp, err := client.Get(ctx, strings.TrimSuffix(prefix, "/")+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return err
	}
	key := ""
	for _, kv := range resp.Kvs {
		if strings.HasSuffix(string(kv.Key), "/virtplatformconfigs/"+name) {
			key = string(kv.Key)
		}
	}
	if key == "" {
		return fmt.Errorf("no stored VirtPlatformConfig %q under %s", name, prefix)
	}
	// The server writes too (its controller): a lost race is tried again
	// on what it wrote.
	for attempt := 1; ; attempt++ {
		err := editKey(ctx, client, key, edit)
		if !errors.Is(err, errChanged) || attempt == 5 {
			return err
		}
	}
}

var errChanged = errors.New("changed while it was being edited")

func editKey(ctx context.Context, client *clientv3.Client, key string, edit func(obj map[string]any) error) error {
	got, err := client.Get(ctx, key)
	if err != nil {
		return err
	}
	if len(got.Kvs) != 1 {
		return fmt.Errorf("%s disappeared", key)
	}
	var obj map[string]any
	if err := json.Unmarshal(got.Kvs[0].Value, &obj); err != nil {
		return fmt.Errorf("%s is not stored as JSON: %w", key, err)
	}
	if err := edit(obj); err != nil {
		return err
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	txn, err := client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", got.Kvs[0].ModRevision)).
		Then(clientv3.OpPut(key, string(data))).Commit()
	if err != nil {
		return err
	}
	if !txn.Succeeded {
		return fmt.Errorf("%s %w", key, errChanged)
	}
	return nil
}
