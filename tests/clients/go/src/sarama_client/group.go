// The consumer-group flow with Sarama's ConsumerGroup: three members share the topic's partitions and
// consume COUNT records between them, marking each; then member 0 leaves and the other two must take
// over its partitions. Prints "balanced <claims>" and "takeover <claims>", claims being each member's
// sorted partitions, e.g. "[0 1] [2 3] [4 5]".
package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/Shopify/sarama"
)

type member struct {
	mu      sync.Mutex
	claims  []int32
	seen    *counter
	group   sarama.ConsumerGroup
	cancel  context.CancelFunc
	stopped chan struct{}
}

type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (m *member) Setup(s sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.claims = nil
	for _, parts := range s.Claims() {
		m.claims = append(m.claims, parts...)
	}
	sort.Slice(m.claims, func(i, j int) bool { return m.claims[i] < m.claims[j] })
	return nil
}

func (m *member) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (m *member) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for msg := range c.Messages() {
		m.seen.add()
		s.MarkMessage(msg, "")
	}
	return nil
}

func (m *member) owned() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]int32(nil), m.claims...)
}

func claimsOf(members []*member) string {
	out := ""
	for i, m := range members {
		if i > 0 {
			out += " "
		}
		out += fmt.Sprint(m.owned())
	}
	return out
}

func sizes(members []*member) []int {
	var out []int
	for _, m := range members {
		out = append(out, len(m.owned()))
	}
	sort.Ints(out)
	return out
}

func waitUntil(check func() bool, what string) error {
	deadline := time.Now().Add(30 * time.Second)
	for !check() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

func groupFlow(brokers []string, topic, groupID string, count int) error {
	seen := &counter{}
	var members []*member
	for i := 0; i < 3; i++ {
		cfg := config("none", "1")
		cfg.Version = sarama.V2_1_0_0
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
		cfg.Consumer.Offsets.CommitInterval = 100 * time.Millisecond
		cfg.Consumer.Group.Heartbeat.Interval = 200 * time.Millisecond
		cfg.Consumer.Group.Session.Timeout = 6 * time.Second
		g, err := sarama.NewConsumerGroup(brokers, groupID, cfg)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithCancel(context.Background())
		m := &member{seen: seen, group: g, cancel: cancel, stopped: make(chan struct{})}
		go func() {
			defer close(m.stopped)
			for ctx.Err() == nil {
				if err := g.Consume(ctx, []string{topic}, m); err != nil && ctx.Err() == nil {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
		members = append(members, m)
	}
	balanced := func() bool { s := sizes(members); return seen.get() >= count && s[0] == 2 && s[2] == 2 }
	if err := waitUntil(balanced, "three balanced members"); err != nil {
		return fmt.Errorf("%v (seen %d, claims %s)", err, seen.get(), claimsOf(members))
	}
	fmt.Println("balanced", claimsOf(members))
	members[0].cancel()
	<-members[0].stopped
	if err := members[0].group.Close(); err != nil {
		return err
	}
	rest := members[1:]
	takeover := func() bool { s := sizes(rest); return s[0] == 3 && s[1] == 3 }
	if err := waitUntil(takeover, "the takeover"); err != nil {
		return fmt.Errorf("%v (claims %s)", err, claimsOf(rest))
	}
	fmt.Println("takeover", claimsOf(rest))
	for _, m := range rest {
		m.cancel()
		<-m.stopped
		if err := m.group.Close(); err != nil {
			return err
		}
	}
	return nil
}
