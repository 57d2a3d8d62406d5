package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/topicadmin"
	"github.com/atmostonce/toolexec/topics"
)

// broker is the cluster of one run: kfake in this process, or the seeds
// given. Every topic the run creates is named under runPrefix, so that two
// runs on one broker never meet, and is deleted by close.
type broker struct {
	seeds     []string
	runPrefix string
	kfake     *kfake.Cluster
	cl        *kgo.Client
	adm       *kadm.Client

	mu      sync.Mutex
	created []topics.Names
	others  []string // topics of the run outside any member's set (the floor's)
}

func startBroker(seeds []string) (*broker, error) {
	b := &broker{seeds: seeds, runPrefix: "bench" + randHex(4) + "."}
	if len(seeds) == 0 {
		c, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			return nil, fmt.Errorf("kfake: %w", err)
		}
		b.kfake, b.seeds = c, c.ListenAddrs()
	}
	cl, err := kgo.NewClient(seedOpts(b.seeds)...)
	if err != nil {
		b.closeCluster()
		return nil, fmt.Errorf("admin client: %w", err)
	}
	b.cl, b.adm = cl, kadm.NewClient(cl)
	return b, nil
}

// env is the topic set of one member: its own prefix and group.
type env struct {
	names  topics.Names
	prefix string
	group  string
	layout topicadmin.Layout
}

// newEnv creates the five topics under runPrefix+name+"." with the
// settings the executor checks at start.
func (b *broker) newEnv(ctx context.Context, name string, partitions int32) (*env, error) {
	prefix := b.runPrefix + name + "."
	e := &env{names: topics.NamesWithPrefix(prefix), prefix: prefix, group: prefix + "group"}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	b.mu.Lock()
	b.created = append(b.created, e.names)
	b.mu.Unlock()
	l, err := topicadmin.Ensure(ctx, b.adm, e.names, topicadmin.Settings{Partitions: partitions, MinEventRetention: 48 * time.Hour})
	if err != nil {
		return nil, fmt.Errorf("topics %s: %w", prefix, err)
	}
	e.layout = l
	return e, nil
}

// newTopic creates one topic of the run, to be deleted with the others.
func (b *broker) newTopic(ctx context.Context, name string, partitions int32) error {
	b.mu.Lock()
	b.others = append(b.others, name)
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := b.adm.CreateTopic(ctx, partitions, -1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("topic %s: %w", name, err)
	}
	return nil
}

// close deletes the run's topics (unless keep) and stops kfake.
func (b *broker) close(keep bool) {
	if !keep {
		b.deleteTopics()
	}
	b.cl.Close()
	b.closeCluster()
}

func (b *broker) deleteTopics() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b.mu.Lock()
	defer b.mu.Unlock()
	all := slices.Clone(b.others)
	for _, n := range b.created {
		all = append(all, n.All()...)
	}
	if len(all) == 0 || b.kfake != nil {
		return
	}
	if _, err := b.adm.DeleteTopics(ctx, all...); err != nil {
		progress("could not delete the run's topics (%s*): %v", b.runPrefix, err)
	}
}

func (b *broker) closeCluster() {
	if b.kfake != nil {
		b.kfake.Close()
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
