/*
 * kafka-chaos: the Java client worker's transactional producer (Worker.java has the protocol). The librdkafka
 * TransactionalProducerWorkload's semantics (harness/workload/txn_producer.py) on the Java client's transactional
 * API: transactions of `records` records over the topic's partitions in turn, aborted on purpose where the seed's
 * draw says so (the same draw: harness/workload/common.py txn_abort_drawn), each recorded as txn.begin and
 * txn.commit / txn.abort with its outcome (committed, aborted, unknown: a fatal error after the commit was asked
 * for, or the run ending while the end was still being retried).
 *
 * The Java client's errors, as KafkaProducer's javadoc sorts them: a TimeoutException of initTransactions,
 * commitTransaction or abortTransaction may be retried; ProducerFencedException and InvalidProducerEpochException
 * fence the session (recorded as txn.fenced with how long the open transaction had been open, then a new session
 * with the same transactional.id), as does InvalidTxnStateException for a transaction open past its timeout (the
 * coordinator was aborting it); OutOfOrderSequenceException, AuthorizationException and UnsupportedVersionException
 * are fatal (client.error, sending ends); any other KafkaException of a commit makes the transaction abortable:
 * abortTransaction, outcome aborted. Only EndTxn(COMMIT) commits, so a transaction whose commit was never asked for
 * ends aborted whatever happened to it.
 */
package kafkachaos;

import static kafkachaos.Worker.*;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.InvalidTxnStateException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;

class TxnProducerRole extends ProducerRole {
    final String transactionalId;
    final int records;
    final double abortRate;
    final long seed;
    final long timeoutMs;
    long nextTxn;
    Long abandonedTxn;
    boolean abandonedAbort;
    boolean abandonedCommitting;
    boolean openAbort;
    long openedAtNs;
    boolean committing;
    long giveUpAtNs;
    volatile Throwable fenceSeen;
    boolean fenceRecorded;

    /** Thrown on the sending thread when the session was fenced or met a fatal error. */
    static final class SessionEnded extends Exception {
        final Throwable cause;
        final boolean fence;

        SessionEnded(Throwable cause, boolean fence) {
            super(cause);
            this.cause = cause;
            this.fence = fence;
        }
    }

    TxnProducerRole(Properties all) {
        super(all);
        transactionalId = all.getProperty("worker.transactional_id");
        records = Integer.parseInt(all.getProperty("worker.records"));
        abortRate = Double.parseDouble(all.getProperty("worker.abort_rate", "0"));
        seed = Long.parseLong(all.getProperty("worker.seed", "0"));
        timeoutMs = Long.parseLong(all.getProperty("worker.timeout_ms"));
        nextTxn = Long.parseLong(all.getProperty("worker.txn_base", "0"));
        String abandoned = all.getProperty("worker.abandoned_txn");
        abandonedTxn = abandoned == null || abandoned.isEmpty() ? null : Long.parseLong(abandoned);
        abandonedAbort = Boolean.parseBoolean(all.getProperty("worker.abandoned_abort", "false"));
        abandonedCommitting = Boolean.parseBoolean(all.getProperty("worker.abandoned_committing", "false"));
    }

    /** Whether transaction `txn` of `producer` is aborted on purpose: the first 53 bits of SHA-256 of
     *  "seed:producer:txn" as a fraction of 1, below the abort rate (txn_abort_drawn in Python, the same number). */
    static boolean abortDrawn(long seed, String producer, long txn, double rate) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256")
                .digest((seed + ":" + producer + ":" + txn).getBytes(StandardCharsets.UTF_8));
            long bits = 0;
            for (int i = 0; i < 8; i++) bits = (bits << 8) | (d[i] & 0xffL);
            return (bits >>> 11) * 0x1.0p-53 < rate;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    Map<String, Object> txnEvent(String type, Long txn) {
        Map<String, Object> m = event(type);
        m.put("producer", producerId);
        m.put("transactional_id", transactionalId);
        m.put("txn", txn);
        return m;
    }

    @Override
    void run() throws Exception {
        Out.line(ctl("ready"));
        Pacer pace = new Pacer(rate);
        long n = 0;
        while (!closing && !fatal && !stopped) {
            KafkaProducer<byte[], byte[]> producer = newProducer();
            fenceSeen = null;
            fenceRecorded = false;
            try {
                if (!init(producer)) break;
                int partitions = partitionCount(producer);
                while (!stopped && !closing) {
                    begin(producer);
                    int sent = 0;
                    while (sent < records && !stopped && !closing) {
                        if (holding) {
                            hold(producer, partitions, n++);
                            zombieWrites(producer, partitions);
                            return;
                        }
                        checkSession();
                        if (!pace.due()) continue;
                        sendOne(producer, n++, partitions > 0 ? sent % partitions : null);
                        sent++;
                        while (paused && !closing) { // after a record: a paused application holds a transaction open
                            Thread.sleep(20);
                            pace.restart();
                        }
                    }
                    end(producer);
                }
            } catch (SessionEnded ended) {
                sessionEnded(ended);
            } finally {
                producer.close(Duration.ZERO);
            }
        }
        drainThenWaitForClose();
    }

    /** initTransactions, retried on timeouts until it succeeds or sending ends; false when it ended first. */
    boolean init(KafkaProducer<byte[], byte[]> producer) throws SessionEnded {
        while (!stopped && !closing) {
            try {
                producer.initTransactions();
                Out.line(ctl("initialized"));
                if (abandonedTxn != null && abandonedCommitting) {
                    // its EndTxn(COMMIT) may have reached the coordinator, which then completes the commit
                    recordEnd(abandonedTxn, abandonedAbort, "unknown", "_ABANDONED", "its commit was under way when "
                        + "an abrupt restart ended the client; the new session's initTransactions completed or aborted it");
                } else if (abandonedTxn != null) {
                    recordEnd(abandonedTxn, abandonedAbort, "aborted", "_ABANDONED",
                        "left open by an abrupt restart; the new session's initTransactions aborted it");
                }
                abandonedTxn = null;
                return true;
            } catch (TimeoutException e) {
                // retriable: initTransactions may be called again
            } catch (KafkaException e) {
                throw classify(e);
            }
        }
        return false;
    }

    int partitionCount(KafkaProducer<byte[], byte[]> producer) {
        try {
            List<PartitionInfo> infos = producer.partitionsFor(topic);
            return infos == null ? 0 : infos.size();
        } catch (KafkaException e) {
            return 0;
        }
    }

    void begin(KafkaProducer<byte[], byte[]> producer) throws SessionEnded {
        try {
            producer.beginTransaction();
        } catch (KafkaException e) {
            throw classify(e);
        }
        long txn = nextTxn++;
        openAbort = abortDrawn(seed, producerId, txn, abortRate);
        openedAtNs = System.nanoTime();
        committing = false;
        giveUpAtNs = 0;
        openTxn = txn;
        Out.line(txnEvent("txn.begin", txn));
    }

    void checkSession() throws SessionEnded {
        Throwable seen = fenceSeen;
        if (seen != null) throw classify(seen);
    }

    /** Commit or abort the open transaction, as drawn at its begin, and record the outcome; returns it. */
    String end(KafkaProducer<byte[], byte[]> producer) throws SessionEnded {
        long txn = openTxn;
        boolean abort = openAbort;
        if (abort) {
            try {
                producer.flush(); // the aborted records are in the log before the abort (as the librdkafka workload)
            } catch (KafkaException e) {
                throw classify(e);
            }
        }
        checkSession();
        committing = !abort;
        if (committing) {
            Map<String, Object> m = ctl("committing"); // an abrupt restart from here on leaves the outcome unknown
            m.put("txn", txn);
            Out.line(m);
        }
        String[] result = attempt(producer, !abort);
        if ("requires-abort".equals(result[0])) {
            String[] aborted = attempt(producer, false);
            result = "aborted".equals(aborted[0]) ? new String[] {"aborted", result[1], result[2]}
                : new String[] {aborted[0], aborted[1], result[2] + "; " + aborted[2]};
        }
        openTxn = null;
        recordEnd(txn, abort, result[0], result[1], result[2]);
        return result[0];
    }

    /** {outcome, error, detail}: commit (or abort) retried on timeouts; "requires-abort" after another error of a
     *  commit; "unknown" when the retries end (after the transaction timeout once sending has ended). */
    String[] attempt(KafkaProducer<byte[], byte[]> producer, boolean commit) throws SessionEnded {
        while (true) {
            try {
                if (commit) producer.commitTransaction();
                else producer.abortTransaction();
                return new String[] {commit ? "committed" : "aborted", null, null};
            } catch (TimeoutException e) {
                if (givingUp()) {
                    return new String[] {"unknown", errorName(e), detail(e) + " (still failing when the run ended)"};
                }
            } catch (KafkaException e) {
                SessionEnded ended = classify(e);
                if (ended.fence || isFatal(ended.cause)) throw ended;
                if (commit) return new String[] {"requires-abort", errorName(e), detail(e)};
                return new String[] {"unknown", errorName(e), detail(e)};
            }
        }
    }

    boolean givingUp() {
        if (!stopped && !closing) return false;
        if (giveUpAtNs == 0) giveUpAtNs = System.nanoTime() + timeoutMs * 1_000_000L;
        return System.nanoTime() > giveUpAtNs;
    }

    long openMs() {
        return (System.nanoTime() - openedAtNs) / 1_000_000L;
    }

    /** What an exception means for the session: a fence (or INVALID_TXN_STATE past the timeout), a fatal error, or
     *  neither (abortable). The cause chain counts: the Java client wraps the error that put it in an error state. */
    SessionEnded classify(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (c instanceof ProducerFencedException || c instanceof InvalidProducerEpochException) {
                return new SessionEnded(c, true);
            }
            if (c instanceof InvalidTxnStateException && openTxn != null && openMs() >= timeoutMs) {
                return new SessionEnded(c, true);
            }
            if (isFatal(c)) return new SessionEnded(c, false);
        }
        return new SessionEnded(e, false);
    }

    /** A write's fatal error (the producer's I/O thread): the sending thread handles it at its next step. */
    @Override
    void onFatal(Throwable e) {
        if (fenceSeen == null) fenceSeen = e;
    }

    void sessionEnded(SessionEnded ended) {
        Long txn = openTxn;
        long open = txn == null ? 0 : openMs();
        if (ended.fence && !fenceRecorded) {
            fenceRecorded = true;
            Map<String, Object> m = txnEvent("txn.fenced", txn);
            m.put("error", errorName(ended.cause));
            m.put("error_detail", detail(ended.cause));
            m.put("open_ms", txn == null ? null : open);
            m.put("timeout_ms", timeoutMs);
            Out.line(m);
        }
        if (txn != null) {
            boolean explained = ended.fence && open >= timeoutMs;
            recordEnd(txn, openAbort, !committing || explained ? "aborted" : "unknown", errorName(ended.cause),
                detail(ended.cause));
            openTxn = null;
        }
        if (!ended.fence) fatalEnd(ended.cause); // a new session follows a fence, nothing follows a fatal error
    }

    /** A zombie restart: keep the open transaction open (begun now, with one record the coordinator has seen, if
     *  none is), deliver what is in flight and say "held" with it; the harness then starts a new session. */
    void hold(KafkaProducer<byte[], byte[]> producer, int partitions, long n) throws SessionEnded, InterruptedException {
        if (openTxn == null) {
            begin(producer);
            sendOne(producer, n, partitions > 0 ? 0 : null);
        }
        try {
            producer.flush();
        } catch (KafkaException e) {
            // the zombie's own outcome follows
        }
        Map<String, Object> m = ctl("held");
        m.put("txn", openTxn);
        Out.line(m);
    }

    /** Once the new session's initTransactions fenced this one ("zombie <first value>"): `records` more records into
     *  the open transaction, marked zombie, then a commit; txn.zombie records what Kafka answered (fenced, refused,
     *  committed). */
    void zombieWrites(KafkaProducer<byte[], byte[]> producer, int partitions) throws InterruptedException {
        while (!zombieGo && !closing) Thread.sleep(20);
        if (closing) return;
        long txn = openTxn;
        zombie = true;
        long n = zombieBase - valueBase; // the values the harness kept for the zombie: no session writes them
        for (int i = 0; i < records; i++) sendOne(producer, n + i, partitions > 0 ? i % partitions : null);
        String outcome = "committed";
        Throwable error = null;
        try {
            producer.commitTransaction();
        } catch (KafkaException e) {
            error = e;
            SessionEnded ended = classify(e);
            outcome = ended.fence || isFatal(ended.cause) ? "fenced" : "refused";
        }
        try {
            producer.flush();
        } catch (KafkaException e) {
            if (error == null) error = e;
        }
        Map<String, Object> m = txnEvent("txn.zombie", txn);
        m.put("outcome", outcome);
        m.put("error", error == null ? null : errorName(error));
        m.put("error_detail", error == null ? null : detail(error));
        Out.line(m);
        Out.line(ctl("zombied"));
        openTxn = null;
        stopped = true;
    }

    void recordEnd(long txn, boolean abort, String outcome, String error, String errorDetail) {
        Map<String, Object> m = txnEvent(abort ? "txn.abort" : "txn.commit", txn);
        m.put("outcome", outcome);
        m.put("definite", !"unknown".equals(outcome));
        m.put("error", error);
        m.put("error_detail", errorDetail);
        List<Object> offsets = endOffsets();
        if (offsets != null) m.put("offsets", offsets);
        Out.line(m);
    }

    /** What a pipeline adds to txn.commit / txn.abort: the offsets its transaction commits for its group. */
    List<Object> endOffsets() {
        return null;
    }
}
