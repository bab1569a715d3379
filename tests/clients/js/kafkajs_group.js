// kafkajs_group: the consumer-group flow with kafkajs for mockbroker's tests.
//   node kafkajs_group.js BROKERS TOPIC GROUP COUNT
// Three members of GROUP consume COUNT records of TOPIC between them; then one disconnects and the
// other two must take over its partitions. Prints one JSON line per step:
//   {"step":"balanced","assignments":[[..],[..],[..]],"consumed":N}
//   {"step":"takeover","assignments":[[..],[..]]}
const { Kafka, logLevel } = require("kafkajs");

function waitFor(check, what, ms = 30000) {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const timer = setInterval(() => {
      if (check()) {
        clearInterval(timer);
        resolve();
      } else if (Date.now() - started > ms) {
        clearInterval(timer);
        reject(new Error(`timed out waiting for ${what}`));
      }
    }, 20);
  });
}

async function main() {
  const [brokers, topic, group, count] = process.argv.slice(2);
  const kafka = new Kafka({ clientId: "kafkajs-group", brokers: brokers.split(","), logLevel: logLevel.ERROR });
  const seen = new Set();
  const members = [];
  for (let i = 0; i < 3; i++) {
    const consumer = kafka.consumer({ groupId: group, sessionTimeout: 10000, heartbeatInterval: 200,
                                      maxWaitTimeInMs: 100, rebalanceTimeout: 10000 });
    const member = { consumer, assigned: [] };
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      member.assigned = (e.payload.memberAssignment[topic] || []).slice().sort((a, b) => a - b);
    });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ partition, message }) => { seen.add(`${partition}:${message.offset}`); } });
    members.push(member);
  }
  const sizes = (ms) => ms.map((m) => m.assigned.length).sort().join(",");
  await waitFor(() => seen.size >= Number(count) && sizes(members) === "2,2,2", "three balanced members");
  console.log(JSON.stringify({ step: "balanced", assignments: members.map((m) => m.assigned), consumed: seen.size }));
  await members[0].consumer.disconnect();
  const rest = members.slice(1);
  await waitFor(() => sizes(rest) === "3,3", "the takeover");
  console.log(JSON.stringify({ step: "takeover", assignments: rest.map((m) => m.assigned) }));
  for (const m of rest) await m.consumer.disconnect();
}

main().catch((err) => {
  console.error("error:", err && err.stack ? err.stack : err);
  process.exit(1);
});
