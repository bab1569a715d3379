#!/usr/bin/env bash
# Installs the non-Python Kafka clients the test suite drives: kcat, Sarama (Go, from Debian),
# kafkajs and @confluentinc/kafka-javascript (npm; CKJS_LINKING=dynamic builds the librdkafka bundled in the
# package, 2.15 for 1.10, as a shared library next to the binding: not Debian's 2.0), and a Java runtime
# for the Spark tests (pyspark itself comes with the Python test extras), and Debian's chromium for the browser
# tests of the console and the report (Playwright for Python, from the test extras, drives it: never
# `playwright install`, which downloads a browser), and Debian's burrow and zookeeper for tests/burrow (LinkedIn's
# lag monitor reading __consumer_offsets; the package `zookeeper`, not `zookeeperd`: the tests start it themselves).
# Idempotent: quick when everything is already there.  Needs root for apt.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v kcat >/dev/null || need+=(kcat)
command -v go >/dev/null || need+=(golang-go)
[ -d /usr/share/gocode/src/github.com/Shopify/sarama ] || need+=(golang-github-shopify-sarama-dev)
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
dpkg -s librdkafka-dev >/dev/null 2>&1 || need+=(librdkafka-dev)
command -v java >/dev/null || need+=(openjdk-17-jre-headless)  # Spark (the data source tests)
command -v chromium >/dev/null || need+=(chromium)  # the console's and report's browser tests (Playwright drives it)
command -v Burrow >/dev/null || need+=(burrow)  # tests/burrow (Debian names the binary /usr/bin/Burrow)
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)  # Burrow's ZooKeeper (tests/burrow/harness.py runs it)
if [ ${#need[@]} -gt 0 ]; then
  echo "install-clients: apt-get install ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
else
  echo "install-clients: apt packages present"
fi

cd tests/clients/js
native=node_modules/@confluentinc/kafka-javascript/build/Release/confluent-kafka-javascript.node
if [ -f node_modules/kafkajs/package.json ] && [ -f node_modules/kafkajs-lz4/package.json ] && [ -f "$native" ]; then
  echo "install-clients: node packages present"
else
  echo "install-clients: npm install (kafkajs and its snappy/lz4 plugins, @confluentinc/kafka-javascript with its bundled librdkafka)"
  # Without CKJS_LINKING=dynamic the package tries to download a prebuilt binary, which fails here; with it
  # the package builds its bundled librdkafka from source (deps/librdkafka) and links the binding to that.
  CKJS_LINKING=dynamic npm install --no-audit --no-fund --loglevel=error
  # npm 11 holds install scripts back until approved (package.json's allowScripts approves this one);
  # rebuilding makes sure the native module is built whichever npm ran.
  [ -f "$native" ] || CKJS_LINKING=dynamic npm rebuild @confluentinc/kafka-javascript --loglevel=error
  [ -f "$native" ] || { echo "install-clients: @confluentinc/kafka-javascript did not build" >&2; exit 1; }
fi
