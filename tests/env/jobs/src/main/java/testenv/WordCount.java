package testenv;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * Bounded word count over a few built-in lines (or the program arguments when
 * given); prints "(word,count)" updates to the TaskManager's stdout and
 * finishes.  Used by tests/env/smoke.sh to check a submitted job reaches
 * FINISHED.
 */
public final class WordCount {
    private static final String[] LINES = {
        "to be or not to be that is the question",
        "whether tis nobler in the mind to suffer",
        "the slings and arrows of outrageous fortune",
    };

    private WordCount() {}

    public static void main(String[] args) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        String[] lines = args.length > 0 ? args : LINES;
        DataStream<Tuple2<String, Integer>> counts = env.fromData(lines)
                .flatMap((String line, org.apache.flink.util.Collector<Tuple2<String, Integer>> out) -> {
                    for (String w : line.toLowerCase().split("\\W+")) {
                        if (!w.isEmpty()) {
                            out.collect(Tuple2.of(w, 1));
                        }
                    }
                })
                .returns(Types.TUPLE(Types.STRING, Types.INT))
                .keyBy(t -> t.f0)
                .sum(1);
        counts.print();
        env.execute("testenv-wordcount");
    }
}
