/*
 * kafka-chaos: the Java client worker's commit recorder (see MemberRole.java).
 */
package kafkachaos;

import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/** Records every commit the client makes (auto, sync, async): ConsumerInterceptor.onCommit is Kafka's one
 *  hook that sees auto-commits. The generation is the one read before the poll that made the commit. */
public final class CommitRecorder implements ConsumerInterceptor<byte[], byte[]> {
    static volatile MemberRole member;

    @Override public ConsumerRecords<byte[], byte[]> onConsume(ConsumerRecords<byte[], byte[]> records) {
        return records;
    }

    @Override public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {
        MemberRole m = member;
        if (m != null) m.committed(offsets);
    }

    @Override public void close() {}

    @Override public void configure(Map<String, ?> configs) {}
}
