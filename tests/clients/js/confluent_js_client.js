// confluent_js_client: produce and consume with @confluentinc/kafka-javascript (librdkafka) for
// mockbroker's tests, through its node-rdkafka style API.
//   node confluent_js_client.js produce BROKERS TOPIC CODEC ACKS COUNT PARTITIONS
//   node confluent_js_client.js consume BROKERS TOPIC - - COUNT PARTITIONS
// produce prints "acked N"; consume prints one tab-separated line per record:
// partition, offset, key, value, headers (k=v;...), timestamp.
const Kafka = require("@confluentinc/kafka-javascript");

function produce(brokers, topic, codec, acks, n, p) {
  return new Promise((resolve, reject) => {
    const producer = new Kafka.Producer({
      "metadata.broker.list": brokers,
      "compression.codec": codec,
      "linger.ms": 5,
      "dr_cb": true,
      "request.required.acks": acks === "all" ? -1 : Number(acks),
    });
    const base = 1760000000000;
    let acked = 0;
    let flushed = false;
    let done = false;
    const timer = setTimeout(() => reject(new Error(`timed out after ${acked} acks`)), 60000);
    // disconnect only once flush() has returned as well: disconnecting while its worker thread still
    // flushes the handle crashed node now and then (SIGSEGV, no output)
    const finish = () => {
      if (done || !flushed || acked !== n) return;
      done = true;
      clearTimeout(timer);
      producer.disconnect(() => resolve(acked));
    };
    producer.on("delivery-report", (err) => {
      if (err) return reject(err);
      acked += 1;
      finish();
    });
    producer.on("event.error", reject);
    producer.setPollInterval(10);
    producer.on("ready", () => {
      for (let i = 0; i < n; i++) {
        const value = Buffer.from(`value-${i}-` + "x".repeat(i % 50));
        producer.produce(topic, i % p, value, `key-${i}`, base + i, null, [{ origin: "confluent-js" }]);
      }
      producer.flush(30000, (err) => {
        if (err) return reject(err);
        flushed = true;
        finish();
      });
    });
    producer.connect();
  });
}

function consume(brokers, topic, n, p) {
  return new Promise((resolve, reject) => {
    const consumer = new Kafka.KafkaConsumer(
      { "metadata.broker.list": brokers, "group.id": "confluent-js", "enable.auto.commit": false },
      {},
    );
    let seen = 0;
    const timer = setTimeout(() => reject(new Error(`timed out after ${seen} records`)), 60000);
    consumer.on("ready", () => {
      const parts = [];
      for (let i = 0; i < p; i++) parts.push({ topic, partition: i, offset: 0 });
      consumer.assign(parts);
      const loop = () => {
        consumer.consume(1000, (err, messages) => {
          if (err) return reject(err);
          for (const m of messages) {
            const headers = (m.headers || []).map((h) => Object.entries(h).map(([k, v]) => `${k}=${v}`).join(";"));
            console.log([m.partition, m.offset, m.key.toString(), m.value.toString(), headers.join(";"), m.timestamp].join("\t"));
            seen += 1;
          }
          if (seen >= n) {
            clearTimeout(timer);
            consumer.disconnect(() => resolve(seen));
          } else {
            setImmediate(loop);
          }
        });
      };
      loop();
    });
    consumer.on("event.error", reject);
    consumer.connect();
  });
}

async function main() {
  const [mode, brokers, topic, codec, acks, count, partitions] = process.argv.slice(2);
  if (mode === "produce") {
    console.log(`acked ${await produce(brokers, topic, codec, acks, Number(count), Number(partitions))}`);
  } else {
    await consume(brokers, topic, Number(count), Number(partitions));
  }
}

main().catch((err) => {
  console.error("error:", err && err.stack ? err.stack : err);
  process.exit(1);
});
