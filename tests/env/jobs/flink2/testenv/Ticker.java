package testenv;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

/**
 * The unbounded test job for Flink 2.x (the jobs jar of the flink2 component; the 1.x one is
 * src/main/java/testenv/Ticker.java): Flink 2 removed SourceFunction and
 * RichFunction#open(Configuration), so the numbers come from the sequence source (FLIP-27),
 * paced by a map chained to it that sleeps between records, and the state is opened with an
 * OpenContext.  Same behaviour: 0, 1, 2, ... one every 100 ms (or the first argument, in ms),
 * keyed into 4 keys, each counting its records in ValueState; runs until cancelled or stopped,
 * so savepoints (POST /jobs/:id/savepoints, /stop) have state to write, and a job resumed
 * from one goes on from the sequence position it saved.
 */
public final class Ticker {
    private Ticker() {}

    /** Passes each record on after a pause, holding the source to one record per pause. */
    static final class Pace implements MapFunction<Long, Long> {
        private static final long serialVersionUID = 1L;
        private final long pauseMs;

        Pace(long pauseMs) {
            this.pauseMs = pauseMs;
        }

        @Override
        public Long map(Long value) throws Exception {
            Thread.sleep(pauseMs);
            return value;
        }
    }

    /** Per key: how many records it has seen (keyed ValueState). */
    static final class KeyCount extends RichMapFunction<Long, Long> {
        private static final long serialVersionUID = 1L;
        private transient ValueState<Long> count;

        @Override
        public void open(OpenContext context) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("seen", Types.LONG));
        }

        @Override
        public Long map(Long ignored) throws Exception {
            Long before = count.value();
            long now = before == null ? 1 : before + 1;
            count.update(now);
            return now;
        }
    }

    public static void main(String[] args) throws Exception {
        long pause = args.length > 0 ? Long.parseLong(args[0]) : 100L;
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.fromSequence(0, Long.MAX_VALUE).name("ticks")
                .map(new Pace(pause)).name("pace")
                .keyBy(v -> v % 4).map(new KeyCount()).returns(Types.LONG)
                .sinkTo(new DiscardingSink<>());
        env.execute("testenv-ticker");
    }
}
