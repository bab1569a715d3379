// kafkajs_client: produce and consume with kafkajs for mockbroker's tests.
//   node kafkajs_client.js produce BROKERS TOPIC CODEC ACKS COUNT PARTITIONS
//   node kafkajs_client.js consume BROKERS TOPIC GROUP - COUNT -
// produce sends key-<i> / value-<i>-x... with header origin=kafkajs and timestamp BASE+i to
// partition i%P, then prints "acked N".  consume joins GROUP (kafkajs consumes only through
// consumer groups), reads COUNT records from the beginning and prints one tab-separated line per
// record: partition, offset, key, value, headers (k=v;...), timestamp.
//   node kafkajs_client.js seek BROKERS TOPIC GROUP OFFSET COUNT
// seek joins GROUP on TOPIC (fromBeginning), seeks partition 0 to OFFSET once it runs and prints the value
// of each record read, one a line, until COUNT came (an offset outside the log makes kafkajs reset).
const { Kafka, CompressionTypes, CompressionCodecs, logLevel } = require("kafkajs");

// kafkajs ships gzip only; snappy and lz4 come from the kafkajs-snappy and kafkajs-lz4 plugins.
CompressionCodecs[CompressionTypes.Snappy] = require("kafkajs-snappy");
const LZ4Codec = require("kafkajs-lz4");
CompressionCodecs[CompressionTypes.LZ4] = new LZ4Codec().codec;

// Reads n records of TOPIC as a member of GROUP (fromBeginning), printing line(payload) for each;
// started(consumer) runs once the consumer runs (seek mode seeks there).
async function readRecords(kafka, topic, group, n, line, started) {
  // a short fetch wait: disconnect() waits for the fetch in flight
  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 10000, heartbeatInterval: 500, maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let seen = 0;
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${seen} records`)), 60000);
    consumer.run({
      eachMessage: async (payload) => {
        console.log(line(payload));
        seen += 1;
        if (seen === n) {
          clearTimeout(timer);
          resolve();
        }
      },
    }).then(() => started(consumer)).catch(reject);
  });
  await consumer.disconnect();
}

function consume(kafka, topic, group, n) {
  return readRecords(kafka, topic, group, n, ({ partition, message }) => {
    const headers = Object.entries(message.headers || {}).map(([k, v]) => `${k}=${v}`).join(";");
    return [partition, message.offset, message.key, message.value, headers, message.timestamp].join("\t");
  }, () => {});
}

function seek(kafka, topic, group, offset, n) {
  return readRecords(kafka, topic, group, n, ({ message }) => String(message.value),
    (consumer) => consumer.seek({ topic, partition: 0, offset: String(offset) }));
}

async function main() {
  const [mode, brokers, topic, codec, acks, count, partitions] = process.argv.slice(2);
  const kafka = new Kafka({ clientId: "kafkajs-test", brokers: brokers.split(","), logLevel: logLevel.ERROR });
  if (mode === "consume") return consume(kafka, topic, codec, Number(count));
  if (mode === "seek") return seek(kafka, topic, codec, Number(acks), Number(count));
  if (mode !== "produce") throw new Error(`unknown mode ${mode}`);
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const compression = {
    none: CompressionTypes.None,
    gzip: CompressionTypes.GZIP,
    snappy: CompressionTypes.Snappy,
    lz4: CompressionTypes.LZ4,
  }[codec];
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
