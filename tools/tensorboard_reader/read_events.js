#!/usr/bin/env node
// Reads TensorBoard event files without any of chorus's code: the TFRecord framing is
// parsed here, both CRC-32Cs of every record are checked with @aws-crypto/crc32c, and
// each record is decoded as a tensorboard.Event with protobufjs from TensorBoard's own
// .proto files (proto/, copied from github.com/tensorflow/tensorboard).
//
//   node read_events.js FILE...   prints "tag step value" for every scalar summary
//
// Exits 1, naming the file and byte offset, on a bad CRC, a truncated record, a first
// event that is not file_version "brain.Event:2", or a summary value that is not a
// float32 scalar of the "scalars" plugin.
"use strict";

const fs = require("fs");
const path = require("path");
const protobuf = require("protobufjs");
const { crc32c } = require("@aws-crypto/crc32c");

const PROTO_DIR = path.join(__dirname, "proto");
const DT_FLOAT = 1;

function loadEventType() {
  const root = new protobuf.Root();
  // The .proto files import each other as "tensorboard/compat/proto/…", relative to proto/.
  root.resolvePath = (_origin, target) => path.join(PROTO_DIR, target);
  root.loadSync("tensorboard/compat/proto/event.proto");
  return root.lookupType("tensorboard.Event");
}

// TFRecord's masked CRC: rotate right by 15 bits, add a constant (mod 2^32).
function maskedCrc32c(bytes) {
  const crc = crc32c(bytes) >>> 0;
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

// Every record of a TFRecord file as a Buffer, checking both CRCs.
function* records(file, bytes) {
  let at = 0;
  const fail = (what) => {
    throw new Error(`${file}: byte ${at}: ${what}`);
  };
  while (at < bytes.length) {
    if (bytes.length - at < 12) fail("truncated record header");
    const length = bytes.readBigUInt64LE(at);
    if (length > BigInt(bytes.length)) fail(`record length ${length} is past the end of the file`);
    const n = Number(length);
    if (bytes.readUInt32LE(at + 8) !== maskedCrc32c(bytes.subarray(at, at + 8))) fail("bad masked CRC of the length");
    if (bytes.length - at - 12 < n + 4) fail("truncated record data");
    const data = bytes.subarray(at + 12, at + 12 + n);
    if (bytes.readUInt32LE(at + 12 + n) !== maskedCrc32c(data)) fail("bad masked CRC of the data");
    yield { offset: at, data };
    at += 12 + n + 4;
  }
}

// The float32 of a scalar summary value, as TensorBoard's tensor_util reads it.
function scalarValue(where, value) {
  if (value.simpleValue !== undefined && value.value === "simpleValue") return value.simpleValue;
  const plugin = value.metadata && value.metadata.pluginData ? value.metadata.pluginData.pluginName : "";
  if (plugin !== "scalars") throw new Error(`${where}: tag ${value.tag}: plugin "${plugin}", expected "scalars"`);
  const tensor = value.tensor;
  if (!tensor || tensor.dtype !== DT_FLOAT) throw new Error(`${where}: tag ${value.tag}: expected a DT_FLOAT tensor`);
  if (tensor.tensorShape && tensor.tensorShape.dim.length !== 0) {
    throw new Error(`${where}: tag ${value.tag}: expected a scalar, got ${tensor.tensorShape.dim.length} dims`);
  }
  if (tensor.tensorContent && tensor.tensorContent.length === 4) {
    return Buffer.from(tensor.tensorContent).readFloatLE(0);
  }
  if (tensor.floatVal && tensor.floatVal.length === 1) return tensor.floatVal[0];
  throw new Error(`${where}: tag ${value.tag}: the tensor holds no single float`);
}

function readFile(Event, file) {
  const lines = [];
  let first = true;
  for (const { offset, data } of records(file, fs.readFileSync(file))) {
    const where = `${file}: byte ${offset}`;
    const event = Event.decode(data);
    if (first && event.fileVersion !== "brain.Event:2") {
      throw new Error(`${where}: the first event has file_version "${event.fileVersion}", expected "brain.Event:2"`);
    }
    first = false;
    if (!event.summary) continue;
    for (const value of event.summary.value) lines.push(`${value.tag} ${String(event.step)} ${scalarValue(where, value)}`);
  }
  if (first) throw new Error(`${file}: no records`);
  return lines;
}

function main(files) {
  if (files.length === 0) {
    process.stderr.write("usage: node read_events.js EVENTS_FILE...\n");
    return 2;
  }
  const Event = loadEventType();
  try {
    for (const file of files) process.stdout.write(readFile(Event, file).map((l) => l + "\n").join(""));
  } catch (error) {
    process.stderr.write(`read_events: ${error.message}\n`);
    return 1;
  }
  return 0;
}

process.exitCode = main(process.argv.slice(2));
