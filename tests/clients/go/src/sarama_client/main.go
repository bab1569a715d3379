// sarama_client: produce or consume records with Shopify's Sarama, for mockbroker's tests.
//
//	sarama_client produce -brokers B -topic T -codec gzip -acks 1 -count N -partitions P [-idempotent]
//	sarama_client consume -brokers B -topic T -partitions P -count N
//	sarama_client group -brokers B -topic T -group G -count N
//
// produce sends key-<i> / value-<i> with header origin=sarama to partition i%P and prints
// "acked N" (-idempotent: Sarama's idempotent producer, acks=all, one request in flight);
// consume prints one tab-separated line per record:
// partition, offset, key, value, headers (k=v;...), timestamp in ms.
// group runs three consumer-group members (see group.go).
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/Shopify/sarama"
)

func config(codec string, acks string) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_1_0_0 // record batches, headers and zstd
	cfg.ClientID = "sarama-test"
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	switch codec {
	case "gzip":
		cfg.Producer.Compression = sarama.CompressionGZIP
	case "snappy":
		cfg.Producer.Compression = sarama.CompressionSnappy
	case "lz4":
		cfg.Producer.Compression = sarama.CompressionLZ4
	case "zstd":
		cfg.Producer.Compression = sarama.CompressionZSTD
	}
	switch acks {
	case "0":
		cfg.Producer.RequiredAcks = sarama.NoResponse
	case "all":
		cfg.Producer.RequiredAcks = sarama.WaitForAll
	default:
		cfg.Producer.RequiredAcks = sarama.WaitForLocal
	}
	return cfg
}

func produce(brokers []string, topic, codec, acks string, count, partitions int, idempotent bool) error {
	cfg := config(codec, acks)
	if idempotent {
		cfg.Version = sarama.V0_11_0_0 // Sarama 1.22 builds idempotent batches from 0.11 on
		cfg.Producer.Idempotent = true
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Producer.Retry.Max = 5
		cfg.Net.MaxOpenRequests = 1
	}
	producer, err := sarama.NewAsyncProducer(brokers, cfg)
	if err != nil {
		return err
	}
	base := time.Now()
	go func() {
		for i := 0; i < count; i++ {
			producer.Input() <- &sarama.ProducerMessage{
				Topic:     topic,
				Partition: int32(i % partitions),
				Key:       sarama.StringEncoder(fmt.Sprintf("key-%d", i)),
				Value:     sarama.StringEncoder(fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", i%50))),
				Headers:   []sarama.RecordHeader{{Key: []byte("origin"), Value: []byte("sarama")}},
				Timestamp: base.Add(time.Duration(i) * time.Millisecond),
			}
		}
	}()
	acked := 0
	deadline := time.After(60 * time.Second)
	for acked < count {
		select {
		case <-producer.Successes():
			acked++
		case e := <-producer.Errors():
			return e.Err
		case <-deadline:
			return fmt.Errorf("timed out after %d acks", acked)
		}
	}
	fmt.Printf("acked %d\n", acked)
	return producer.Close()
}

func consume(brokers []string, topic string, partitions, count int) error {
	consumer, err := sarama.NewConsumer(brokers, config("none", "1"))
	if err != nil {
		return err
	}
	defer consumer.Close()
	out := make(chan string, 1024)
	for p := 0; p < partitions; p++ {
		pc, err := consumer.ConsumePartition(topic, int32(p), sarama.OffsetOldest)
		if err != nil {
			return err
		}
		defer pc.Close()
		go func(pc sarama.PartitionConsumer) {
			for m := range pc.Messages() {
				var hs []string
				for _, h := range m.Headers {
					hs = append(hs, string(h.Key)+"="+string(h.Value))
				}
				out <- fmt.Sprintf("%d\t%d\t%s\t%s\t%s\t%d", m.Partition, m.Offset, m.Key, m.Value,
					strings.Join(hs, ";"), m.Timestamp.UnixNano()/int64(time.Millisecond))
			}
		}(pc)
	}
	deadline := time.After(60 * time.Second)
	for seen := 0; seen < count; seen++ {
		select {
		case line := <-out:
			fmt.Println(line)
		case <-deadline:
			return fmt.Errorf("timed out after %d records", seen)
		}
	}
	return nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: sarama_client produce|consume [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	brokers := fs.String("brokers", "127.0.0.1:9092", "bootstrap servers")
	topic := fs.String("topic", "sarama", "topic")
	codec := fs.String("codec", "none", "none|gzip|snappy|lz4|zstd")
	acks := fs.String("acks", "1", "0|1|all")
	count := fs.Int("count", 10000, "records")
	partitions := fs.Int("partitions", 4, "partitions")
	idempotent := fs.Bool("idempotent", false, "use the idempotent producer")
	group := fs.String("group", "sarama-group", "consumer group (group mode)")
	fs.Parse(os.Args[2:])
	list := strings.Split(*brokers, ",")
	var err error
	switch os.Args[1] {
	case "produce":
		err = produce(list, *topic, *codec, *acks, *count, *partitions, *idempotent)
	case "group":
		err = groupFlow(list, *topic, *group, *count)
	default:
		err = consume(list, *topic, *partitions, *count)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
