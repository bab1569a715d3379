// kafkajs_client: produce records with kafkajs for mockbroker's tests.
//   node kafkajs_client.js produce BROKERS TOPIC CODEC ACKS COUNT PARTITIONS
// Sends key-<i> / value-<i>-x... with header origin=kafkajs and timestamp BASE+i to partition i%P,
// then prints "acked N".  (kafkajs consumes only through consumer groups, which the broker does
// not serve yet, so the Python test reads the records back with confluent-kafka.)
const { Kafka, CompressionTypes, logLevel } = require("kafkajs");

async function main() {
  const [mode, brokers, topic, codec, acks, count, partitions] = process.argv.slice(2);
  if (mode !== "produce") throw new Error(`unknown mode ${mode}`);
  const kafka = new Kafka({ clientId: "kafkajs-test", brokers: brokers.split(","), logLevel: logLevel.ERROR });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const compression = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP }[codec];
  const n = Number(count);
  const p = Number(partitions);
  const base = 1760000000000;
  let acked = 0;
  for (let start = 0; start < n; start += 1000) {
    const messages = [];
    for (let i = start; i < Math.min(n, start + 1000); i++) {
      messages.push({
        key: `key-${i}`,
        value: `value-${i}-` + "x".repeat(i % 50),
        partition: i % p,
        headers: { origin: "kafkajs" },
        timestamp: String(base + i),
      });
    }
    await producer.send({ topic, acks: acks === "all" ? -1 : Number(acks), compression, messages });
    acked += messages.length;
  }
  await producer.disconnect();
  console.log(`acked ${acked}`);
}

main().catch((err) => {
  console.error("error:", err && err.stack ? err.stack : err);
  process.exit(1);
});
