/*
 * kafka-chaos: the Java client worker's producer (Worker.java has the protocol): sends value_base + n at the
 * rate and records send, ack, send.error and a fatal client.error, as the librdkafka ProducerWorkload does.
 */
package kafkachaos;

import static kafkachaos.Worker.*;

import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

final class ProducerRole {
    final String producerId;
    final String topic;
    final String acks;
    final double rate;
    final int keys;
    final long valueBase;
    final Properties props;
    final AtomicLong outstanding = new AtomicLong();
    volatile boolean fatal;

    ProducerRole(Properties all) {
        producerId = all.getProperty("worker.producer");
        topic = all.getProperty("worker.topic");
        acks = all.getProperty("worker.acks");
        rate = Double.parseDouble(all.getProperty("worker.rate"));
        keys = Integer.parseInt(all.getProperty("worker.keys", "0"));
        valueBase = Long.parseLong(all.getProperty("worker.value_base", "0"));
        props = clientProps(all);
    }

    Map<String, Object> write(String type, long value, String key) {
        Map<String, Object> m = event(type);
        m.put("producer", producerId);
        m.put("value", value);
        m.put("key", key);
        m.put("topic", topic);
        m.put("acks", acks);
        return m;
    }

    void run() throws Exception {
        KafkaProducer<byte[], byte[]> producer =
            new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
        Out.line(ctl("ready"));
        double interval = 1.0e9 / rate;
        double nextAt = System.nanoTime();
        long n = 0;
        while (!closing && !fatal) {
            if (paused) {
                Thread.sleep(20);
                nextAt = System.nanoTime();
                continue;
            }
            if (stopped) break; // the run drains: sending has ended
            long now = System.nanoTime();
            if (now < nextAt) {
                long waitNs = (long) Math.min(nextAt - now, 50_000_000L);
                Thread.sleep(waitNs / 1_000_000L, (int) (waitNs % 1_000_000L));
                continue;
            }
            nextAt += interval;
            if (now - nextAt > 1.0e9) nextAt = now; // after a stall: resume the rate, no burst
            sendOne(producer, n++);
        }
        // drain: wait for outstanding acks until the deadline, then for close, which aborts what is left
        while (!closing) {
            long deadline = drainDeadlineNs;
            if (deadline != 0 && (outstanding.get() == 0 || System.nanoTime() >= deadline)) {
                drainDeadlineNs = 0;
                Map<String, Object> m = ctl("drained");
                m.put("outstanding", outstanding.get());
                Out.line(m);
            }
            Thread.sleep(20);
        }
        producer.close(Duration.ZERO); // incomplete batches fail their callbacks: recorded, outcome unknown
    }

    void sendOne(KafkaProducer<byte[], byte[]> producer, long n) {
        long value = valueBase + n;
        String key = keys <= 0 ? null : "k" + (n % keys);
        Out.line(write("send", value, key));
        long sentNs = System.nanoTime();
        outstanding.incrementAndGet();
        ProducerRecord<byte[], byte[]> rec = new ProducerRecord<>(topic, key == null ? null
            : key.getBytes(StandardCharsets.UTF_8), Long.toString(value).getBytes(StandardCharsets.UTF_8));
        try {
            producer.send(rec, (md, e) -> onDelivery(value, key, sentNs, md, e));
        } catch (KafkaException e) {
            outstanding.decrementAndGet();
            // send() threw: the record was never enqueued, so it certainly was not written
            error(value, key, e, null, null, true);
            if (isFatal(e)) fatalEnd(e);
        }
    }

    void onDelivery(long value, String key, long sentNs, RecordMetadata md, Exception e) {
        double latencyMs = Math.round((System.nanoTime() - sentNs) / 1000.0) / 1000.0;
        try {
            if (e == null) {
                Map<String, Object> m = write("ack", value, key);
                m.put("partition", md.partition());
                m.put("offset", md.hasOffset() ? md.offset() : null);
                m.put("latency_ms", latencyMs);
                Out.line(m);
                return;
            }
            Integer partition = md != null && md.partition() >= 0 ? md.partition() : null;
            // from a callback: an earlier transmission of the batch may have been written
            error(value, key, e, partition, latencyMs, false);
            if (isFatal(e)) fatalEnd(e);
        } finally {
            outstanding.decrementAndGet();
        }
    }

    void error(long value, String key, Throwable e, Integer partition, Double latencyMs, boolean definite) {
        Map<String, Object> m = write("send.error", value, key);
        if (partition != null) m.put("partition", partition);
        if (latencyMs != null) m.put("latency_ms", latencyMs);
        m.put("error", errorName(e));
        m.put("error_detail", detail(e));
        m.put("retriable", e instanceof RetriableException);
        m.put("fatal", isFatal(e));
        m.put("definite", definite);
        Out.line(m);
    }

    /** The exceptions KafkaProducer.send's documentation calls fatal: the client can send no more. */
    static boolean isFatal(Throwable e) {
        return e instanceof ProducerFencedException || e instanceof OutOfOrderSequenceException
            || e instanceof AuthorizationException || e instanceof UnsupportedVersionException;
    }

    synchronized void fatalEnd(Throwable e) {
        if (fatal) return;
        fatal = true;
        Map<String, Object> m = event("client.error");
        m.put("client", "producer:" + producerId);
        m.put("error", errorName(e));
        m.put("error_detail", detail(e));
        m.put("fatal", true);
        Out.line(m);
    }
}
