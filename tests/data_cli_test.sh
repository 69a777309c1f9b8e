#!/usr/bin/env bash
# The labelled datasets end to end: the generator, each kind trained through
# dpbench, the JSON fields they add, and one check per kind of bad data (exit
# 2 before any epoch; exit 1 naming the file when a worker meets a corrupt
# image, with the partial results kept). Prints "N passed, N failed".
. "$(dirname "$0")/lib.sh"
hup_default "$0" "$@" # SIGHUP at its default for the SIGHUP case, even under nohup
test_init "$@"
json() { # json 'python expression over d' FILE
    /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($1) else 1)" "$2"
}

# ---- the generator
G=$TMP/gen
expect 0 "wrote a folder dataset" -- --make-dataset folder "$G/jpg" --classes 3 --per-class 8 --eval-per-class 2 --size 36x28
expect 0 "wrote a folder dataset" -- --make-dataset folder "$G/png" --classes 3 --per-class 4 --format png --size 20x20
expect 0 "wrote a cifar10 dataset" -- --make-dataset cifar10 "$G/cifar" --per-class 6 --eval-per-class 2
expect 0 "wrote an idx dataset" -- --make-dataset idx "$G/idx" --classes 4 --per-class 10 --gzip
expect 0 "--per-class N" -- --make-dataset --help
expect 2 "KIND must be folder, cifar10 or idx" -- --make-dataset mnist "$G/x"
expect 2 "--size: expected WxH" -- --make-dataset folder "$G/x" --size 12
expect 2 "--size: expected WxH, each from 1 to 8192 (e.g. 224x224), found '5x5x5'" -- --make-dataset folder "$G/x" --size 5x5x5
expect 2 "each from 1 to 8192 (e.g. 224x224), found '65535x1'" -- --make-dataset folder "$G/x" --size 65535x1
expect 2 "10 classes of 32x32" -- --make-dataset cifar10 "$G/x" --classes 3
expect 2 "at most 4096x4096" -- --make-dataset idx "$G/x" --size 5000x5000 --per-class 1
expect 2 "jpg/train is not empty" -- --make-dataset folder "$G/jpg" --classes 2 --per-class 1
# a DIR that cannot be a folder is refused as --export refuses it (exit 2,
# it was 1), for every kind; nothing is written beside it
touch "$TMP/afile"
ln -s "$TMP/nowhere" "$TMP/alink"
for kind in folder cifar10 idx; do
    expect 2 "--make-dataset README.md: not a directory" -- --make-dataset $kind README.md
    expect 2 "afile: not a directory" -- --make-dataset $kind "$TMP/afile/sub"
    expect 2 "alink is a dangling symbolic link" -- --make-dataset $kind "$TMP/alink"
done
[ -z "$(find . "$TMP" -maxdepth 1 -name '*dpbench-stage*')" ] && ok || bad "a staging folder left"
# a dataset.path that is not there: its --make-dataset command once (it was
# said twice), for every kind, exit 2
for kind in folder cifar10 idx; do
    case $kind in folder) p=$TMP/none/train ;; cifar10) p=$TMP/none ;; idx) p=$TMP/none/train-images-idx3-ubyte ;; esac
    expect 2 "no such dataset: \`dpbench --make-dataset $kind $TMP/none\` writes one" -- \
        --set dataset.kind=$kind --set dataset.path="$p"
    n=$(grep -o "make-dataset" "$TMP/err" | wc -l)
    [ "$n" -eq 1 ] && ok || bad "missing $kind dataset: --make-dataset said $n times: $(cat "$TMP/err")"
done
# dataset.make: a missing dataset made first (a line naming the path and
# DIR), the same bytes as --make-dataset's, then trained; present: untouched
for kind in folder cifar10 idx; do
    case $kind in
    folder) p=$TMP/made/f/train d=$TMP/made/f out=3 spec="folder --classes 3 --per-class 4 --size 20x16" ;;
    cifar10) p=$TMP/made/c d=$TMP/made/c out=10 spec="cifar10 --per-class 3" ;;
    idx) p=$TMP/made/i/train-images-idx3-ubyte.gz d=$TMP/made/i out=3 spec="idx --classes 3 --per-class 4 --gzip" ;;
    esac
    expect 0 "making it (dataset.make: $spec) in $d" -- --set dataset.kind=$kind --set dataset.path="$p" \
        --set dataset.make="$spec" --set model.out_features=$out --set train.epochs=1
    grep -q "made $d in" "$TMP/err" && ok || bad "dataset.make $kind: no closing line: $(cat "$TMP/err")"
    "$BIN" --make-dataset $spec "$TMP/made/ref-$kind" >/dev/null
    diff -r "$d" "$TMP/made/ref-$kind" >/dev/null && ok || bad "dataset.make $kind: not what --make-dataset writes"
    expect 0 "" -- --set dataset.kind=$kind --set dataset.path="$p" --set dataset.make="$spec" \
        --set model.out_features=$out --set train.epochs=1
    grep -q "making it" "$TMP/err" && bad "dataset.make $kind: made again over a present dataset" || ok
done
# its errors are the config's (exit 2, the file and line, nothing made)
printf 'dataset:\n  kind: folder\n  path: %s/mk/x/train\n  make: "folder --quality 500"\n' "$TMP" >"$TMP/mk.yaml"
expect 2 "mk.yaml:4: dataset.make: --make-dataset --quality: expected an integer" -- -c "$TMP/mk.yaml"
# what labelled data takes from its files is no sweep: every point would be the same run
for k in dataset.length=3,1000 dataset.features=1,2 model.out_features=2,3; do
    expect 2 "sweep: ${k%%=*}: dataset.kind idx takes it from its files" -- --set dataset.kind=idx \
        --set dataset.path="$G/idx/train-images-idx3-ubyte.gz" --sweep "$k" --repeat 1
done
expect 2 "dataset.make: \"idx\" makes a idx dataset, but dataset.kind is folder" -- \
    --set dataset.kind=folder --set dataset.path="$TMP/mk/x/train" --set dataset.make=idx
expect 2 "writes DIR/train (and the rest); dataset.path must name it" -- \
    --set dataset.kind=folder --set dataset.path="$TMP/mk/x" --set dataset.make=folder
expect 2 "writes DIR/train-images-idx3-ubyte.gz" -- \
    --set dataset.kind=idx --set dataset.path="$TMP/mk/x/a.gz" --set dataset.make="idx --gzip"
expect 2 "dataset.make: only for dataset.kind idx, cifar10 or folder" -- --set dataset.make=folder
expect 2 "--gzip is for idx files" -- --set dataset.kind=cifar10 --set dataset.path="$TMP/mk/c" \
    --set dataset.make="cifar10 --gzip"
# an option the kind has no use for, or one given twice, is refused, not ignored
expect 2 "--make-dataset idx: --format does not apply to it" -- --make-dataset idx "$TMP/mk/i" --format png
expect 2 "--make-dataset cifar10: --quality does not apply to it" -- --make-dataset cifar10 "$TMP/mk/c" --quality 5
expect 2 "--make-dataset: --classes given twice" -- --make-dataset folder "$TMP/mk/f" --classes 2 --classes 3
expect 2 "--make-dataset folder: --quality is for --format jpeg" -- --make-dataset folder "$TMP/mk/f" --format png --quality 5
expect 2 "--make-dataset idx: --quality does not apply to it" -- --set dataset.kind=idx \
    --set dataset.path="$TMP/mk/i/train-images-idx3-ubyte" --set dataset.make="idx --quality 3"
[ ! -e "$TMP/mk" ] && ok || bad "dataset.make refused, yet something was made: $(ls -R "$TMP/mk")"
# two runs that start together make it once, whole (the lock)
spec="folder --classes 2 --per-class 30 --size 64x64"
for i in 1 2; do
    "$BIN" --set dataset.kind=folder --set dataset.path="$TMP/race/train" --set dataset.make="$spec" \
        --set model.out_features=2 --set train.epochs=1 >/dev/null 2>"$TMP/race$i.err" </dev/null &
done
wait
n=$(cat "$TMP/race1.err" "$TMP/race2.err" | grep -c "making it")
[ "$n" -eq 1 ] && [ "$(ls "$TMP/race/train/class_01" | wc -l)" -eq 30 ] && ok ||
    bad "two runs made it $n times: $(cat "$TMP/race1.err" "$TMP/race2.err")"
# a stop while it is made: nothing left, 128 + the signal
"$BIN" --set dataset.kind=folder --set dataset.path="$TMP/big/train" \
    --set dataset.make="folder --size 512x512 --per-class 2000" >/dev/null 2>"$TMP/err" </dev/null &
pid=$!
for i in $(seq 100); do grep -q "making it" "$TMP/err" && break; sleep 0.1; done
sleep 0.3
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 130 ] && [ ! -e "$TMP/big" ] && [ -z "$(find "$TMP" -maxdepth 1 -name '*dpbench-stage*')" ] && ok ||
    bad "SIGINT while dataset.make ran: exit $rc, left $(ls -a "$TMP" | grep -c big): $(cat "$TMP/err")"
if [ "$(ls "$G/jpg/train")" = "$(printf 'class_00\nclass_01\nclass_02')" ] &&
    [ "$(ls "$G/jpg/train/class_01" | wc -l)" -eq 8 ] && [ "$(ls "$G/jpg/val/class_02" | wc -l)" -eq 2 ] &&
    [ "$(stat -c %s "$G/cifar/data_batch_1.bin")" -eq $((12 * 3073)) ] &&
    [ "$(stat -c %s "$G/cifar/test_batch.bin")" -eq $((20 * 3073)) ]; then ok
else bad "generated layout: $(ls -R "$G" | head -20)"; fi
# the same seed writes the same bytes
"$BIN" --make-dataset cifar10 "$G/cifar2" --per-class 6 --eval-per-class 2 >/dev/null
if cmp -s "$G/cifar/data_batch_3.bin" "$G/cifar2/data_batch_3.bin"; then ok; else bad "generator not reproducible"; fi

# ---- each kind trains, with its fields in JSON
run_json() { "$BIN" "$@" --format json >"$TMP/r.json" 2>"$TMP/err" </dev/null; }
if run_json --set dataset.kind=folder --set dataset.path="$G/jpg/train" --set dataset.eval_path="$G/jpg/val" \
        --set loader.num_workers=2 --set train.epochs=3 --set loader.batch_size=4 --set transform.hflip=true &&
    json 'r["loss"] == "cross_entropy" and r["config"]["model"]["out_features"] == 3 and r["config"]["dataset"]["features"] == 3*28*36
          and all(e["read_bytes"] > 0 and 0 <= e["accuracy"] <= 1 and e["read_mbps"] > 0 for e in r["epochs"])
          and r["eval"]["samples"] == 6 and 0 <= r["eval"]["accuracy"] <= 1 and 0 < r["summary"]["au"] <= 1
          for r in [d["runs"][0]]' "$TMP/r.json"; then ok
else bad "folder JSON: $(head -c 400 "$TMP/err")"; fi
if run_json --set dataset.kind=folder --set dataset.path="$G/png/train" --set transform.resize=16 \
        --set transform.crop=12 --set transform.pad=2 --set dataset.drop_cache=true &&
    json 'd["runs"][0]["config"]["dataset"]["features"] == 3*12*12 and d["runs"][0]["eval"] is None
          and d["runs"][0]["epochs"][0]["read_bytes"] > 0' "$TMP/r.json"; then ok
else bad "png folder with resize/crop: $(head -c 400 "$TMP/err")"; fi
if run_json --set dataset.kind=cifar10 --set dataset.path="$G/cifar" --set transform.crop=32 --set transform.pad=4 \
        --set transform.mean=[0.5,0.5,0.5] --set transform.std=[0.25,0.25,0.25] --sweep loader.num_workers=0,2 &&
    json 'd["runs"][0]["config"]["dataset"]["length"] == 60 and d["runs"][1]["eval"]["samples"] == 20
          and d["runs"][0]["epochs"][0]["loss"] == d["runs"][1]["epochs"][0]["loss"]
          and d["runs"][0]["epochs"][0]["read_bytes"] == 0' "$TMP/r.json"; then ok
else bad "cifar10 sweep (workers 0 and 2 must train alike): $(head -c 400 "$TMP/err")"; fi
if run_json --set dataset.kind=idx --set dataset.path="$G/idx/train-images-idx3-ubyte.gz" --set model.loss=mse &&
    json 'd["runs"][0]["loss"] == "mse" and d["runs"][0]["config"]["model"]["loss"] == "mse"
          and d["runs"][0]["eval"]["samples"] == 8' "$TMP/r.json"; then ok
else bad "idx gzip with mse: $(head -c 400 "$TMP/err")"; fi
# the top-level config shows what ran (the shape resolved from the data), not
# the random dataset's defaults; runs that resolved differently are named
if run_json --set dataset.kind=idx --set dataset.path="$G/idx/train-images-idx3-ubyte.gz" --set train.epochs=1 &&
    json 'd["config"]["dataset"]["length"] == 40 and d["config"]["dataset"]["features"] == 784
          and d["config"]["model"]["out_features"] == 4 and d["config"]["model"]["loss"] == "cross_entropy"
          and all(d["config"][s] == d["runs"][0]["config"][s] for s in ("dataset", "model")) and "config_differs" not in d' "$TMP/r.json"; then ok
else bad "idx: top-level config: $(head -c 400 "$TMP/err")"; fi
if run_json --set dataset.kind=folder --set dataset.path="$G/jpg/train" --sweep dataset.eval_path="$G/jpg/val,$G/jpg/train" --set train.epochs=1 &&
    json 'd["config"]["dataset"]["features"] == 3*28*36 and d["config"]["model"]["out_features"] == 3' "$TMP/r.json"; then ok
else bad "folder sweep: top-level config: $(head -c 400 "$TMP/err")"; fi
if run_json --set dataset.kind=folder --sweep dataset.path="$G/jpg/train,$G/png/train" --set train.epochs=1 &&
    json 'd["config_differs"].startswith("dataset.length, dataset.features: ") and d["config"]["model"]["out_features"] == 3' "$TMP/r.json"; then ok
else bad "folder sweep over two datasets: config_differs: $(head -c 400 "$TMP/err")"; fi
expect 0 "accuracy" -- --set dataset.kind=idx --set dataset.path="$G/idx/train-images-idx3-ubyte.gz"
expect 0 "# eval: loss" -- --set dataset.kind=idx --set dataset.path="$G/idx/train-images-idx3-ubyte.gz"
"$BIN" --set dataset.kind=idx --set dataset.path="$G/idx/train-images-idx3-ubyte.gz" --format csv >"$TMP/c.csv"
if head -1 "$TMP/c.csv" | grep -q ',accuracy,read_bytes,world_size,' && sed -n 2p "$TMP/c.csv" | grep -qE ',0\.[0-9]+,0,1,,,$'; then ok
else bad "CSV accuracy/read_bytes: $(head -2 "$TMP/c.csv")"; fi

# ---- config errors
expect 2 "cross_entropy needs labelled data" -- --set model.loss=cross_entropy
expect 2 "dataset.kind folder needs a path" -- --set dataset.kind=folder
expect 2 "$G/none-images-idx3-ubyte: cannot open: No such file" -- --set dataset.kind=idx \
    --set dataset.path="$G/none-images-idx3-ubyte" # the images file named, not its labels
expect 2 "transform.hflip: only for image data" -- --set transform.hflip=true
# from a file: the key it set, with its line (eval_path was named dataset.path, with none)
printf 'dataset:\n  eval_path: /x\n' >"$TMP/evalp.yaml"
expect 2 "evalp.yaml:2: dataset.eval_path: only for dataset.kind idx" -- -c "$TMP/evalp.yaml"
printf 'seed: 1\ntransform:\n  crop: 4\n' >"$TMP/crop.yaml"
expect 2 "crop.yaml:3: transform.crop: only for image data" -- -c "$TMP/crop.yaml"
expect 2 "dataset.sample_cost_us: only for the random dataset" -- --set dataset.kind=cifar10 --set dataset.path="$G/cifar" --set dataset.sample_cost_us=5
expect 2 "transform.pad: 4 needs transform.crop" -- --set dataset.kind=cifar10 --set dataset.path="$G/cifar" --set transform.pad=4
expect 2 "expected 1 or 3 values" -- --set dataset.kind=cifar10 --set dataset.path="$G/cifar" --set transform.mean=[1,2] --set transform.std=[1,2]
# the transformed size, for every kind: the memory estimate and --max-memory
# see it before anything is allocated (a folder's estimate took 5 features
# from the config and a resize to 8192 allocated 11 GB before a word), and a
# sample of more floats than dataset.features allows is refused at load
while read -r kind path big; do
    D=(--set dataset.kind=$kind --set dataset.path="$G/$path")
    start=$(date +%s%N)
    expect 2 "more than the --max-memory limit" -- "${D[@]}" --set transform.resize=8192 --max-memory 4G
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    [ $ms -lt 5000 ] && ok || bad "$kind: transform.resize 8192 refused after $ms ms"
    expect 2 "transform.resize $big: $big x $big x " -- "${D[@]}" --set transform.resize=$big \
        --set loader.batch_size=1
    grep -qF "features per sample, more than the 1048576 dataset.features allows" "$TMP/err" && ok ||
        bad "$kind: resize $big: $(cat "$TMP/err")"
    expect 2 "transform.crop 1100: 1100 x 1100 x " -- "${D[@]}" --set transform.crop=1100 \
        --set transform.pad=600 --set loader.batch_size=1
done <<'KINDS'
idx idx/train-images-idx3-ubyte.gz 1100
cifar10 cifar 600
folder jpg/train 600
folder png/train 600
KINDS

# ---- bad data: found before training, exit 2 naming the file
B=$TMP/bad
mkdir -p "$B"
gunzip -c "$G/idx/train-images-idx3-ubyte.gz" >"$B/train-images-idx3-ubyte"
gunzip -c "$G/idx/train-labels-idx1-ubyte.gz" >"$B/train-labels-idx1-ubyte"
mkdir -p "$B/m2" && cp "$B"/train-* "$B/m2/" && printf '\x00\x00\x08\x04' | dd of="$B/m2/train-images-idx3-ubyte" conv=notrunc 2>/dev/null
expect 2 "m2/train-images-idx3-ubyte: not an idx images file (it starts with 0x00000804, expected 0x00000803)" -- --set dataset.kind=idx --set dataset.path="$B/m2/train-images-idx3-ubyte"
mkdir -p "$B/dims" && cp "$B"/train-* "$B/dims/" && printf '\x00\x00\x00\x00' | dd of="$B/dims/train-images-idx3-ubyte" bs=1 seek=8 conv=notrunc 2>/dev/null
expect 2 "bad idx dimensions" -- --set dataset.kind=idx --set dataset.path="$B/dims/train-images-idx3-ubyte"
mkdir -p "$B/trunc" && cp "$B"/train-* "$B/trunc/" && truncate -s -100 "$B/trunc/train-images-idx3-ubyte"
expect 2 "trunc/train-images-idx3-ubyte: truncated: 31276 bytes, expected 31376 for the 40 images of 28x28" -- --set dataset.kind=idx --set dataset.path="$B/trunc/train-images-idx3-ubyte"
mkdir -p "$B/count" && cp "$B"/train-* "$B/count/" && printf '\x00\x00\x00\x05' | dd of="$B/count/train-labels-idx1-ubyte" bs=1 seek=4 conv=notrunc 2>/dev/null
expect 2 "images/labels count mismatch" -- --set dataset.kind=idx --set dataset.path="$B/count/train-images-idx3-ubyte"
# a cut or empty file is named truncated or empty (not a wrong magic, not a
# count mismatch), for each kind: header, body, nothing
idx_cut() { # NAME IMAGES-BYTES LABELS-BYTES ("" keeps the file whole)
    mkdir -p "$B/$1" && cp "$B"/train-* "$B/$1/"
    [ -n "$2" ] && truncate -s "$2" "$B/$1/train-images-idx3-ubyte"
    [ -n "$3" ] && truncate -s "$3" "$B/$1/train-labels-idx1-ubyte"
    echo "$B/$1/train-images-idx3-ubyte"
}
expect 2 "cut10/train-images-idx3-ubyte: truncated: 10 bytes, shorter than an idx images file's 16-byte header" -- --set dataset.kind=idx --set dataset.path="$(idx_cut cut10 10 "")"
expect 2 "cut2/train-images-idx3-ubyte: truncated: 2 bytes" -- --set dataset.kind=idx --set dataset.path="$(idx_cut cut2 2 "")"
expect 2 "cut0/train-images-idx3-ubyte: empty file (0 bytes), expected an idx images file" -- --set dataset.kind=idx --set dataset.path="$(idx_cut cut0 0 "")"
expect 2 "lcut/train-labels-idx1-ubyte: truncated: 43 bytes, expected 48 for the 40 labels its header declares" -- --set dataset.kind=idx --set dataset.path="$(idx_cut lcut "" -5)"
expect 2 "lcut5/train-labels-idx1-ubyte: truncated: 5 bytes, shorter than an idx labels file's 8-byte header" -- --set dataset.kind=idx --set dataset.path="$(idx_cut lcut5 "" 5)"
expect 2 "lcut0/train-labels-idx1-ubyte: empty file (0 bytes), expected an idx labels file" -- --set dataset.kind=idx --set dataset.path="$(idx_cut lcut0 "" 0)"
expect 2 "ltrail/train-labels-idx1-ubyte: trailing data: more than 48 bytes, expected 48" -- --set dataset.kind=idx --set dataset.path="$(idx_cut ltrail "" 60)"
mkdir -p "$B/cifar0" && cp "$G/cifar"/* "$B/cifar0/" && : >"$B/cifar0/data_batch_2.bin"
expect 2 "cifar0/data_batch_2.bin: empty file (0 bytes), expected CIFAR-10 records" -- --set dataset.kind=cifar10 --set dataset.path="$B/cifar0"
mkdir -p "$B/cifar1" && cp "$G/cifar"/* "$B/cifar1/" && truncate -s 3100 "$B/cifar1/data_batch_3.bin"
expect 2 "cifar1/data_batch_3.bin: 3100 bytes is not a multiple of 3073 (1 label byte + 3072 pixel bytes per record): truncated, its last record has 27 of its 3073 bytes" -- --set dataset.kind=cifar10 --set dataset.path="$B/cifar1"
# CIFAR-100's binary files (a coarse and a fine label: 3074-byte records) renamed
# into a cifar10 folder: the message says what they look like, not only "truncated"
mkdir -p "$B/cifar100" && cp "$G/cifar"/* "$B/cifar100/" && truncate -s $((3074 * 7)) "$B/cifar100/data_batch_1.bin"
expect 2 "cifar100/data_batch_1.bin: 21518 bytes is not a multiple of 3073 (1 label byte + 3072 pixel bytes per record): CIFAR-100's binary file (3074-byte records), which dpbench does not read?" -- --set dataset.kind=cifar10 --set dataset.path="$B/cifar100"
# a batch file given for the folder: named as such, no make-dataset hint (a file is there)
expect 2 "data_batch_1.bin: a file, where cifar10 reads the folder that holds data_batch_1.bin to data_batch_5.bin and test_batch.bin: set the path to its folder ($G/cifar)" -- --set dataset.kind=cifar10 --set dataset.path="$G/cifar/data_batch_1.bin"
# the same with dataset.make: the file is there, not made over ("is not there: making it")
expect 2 "data_batch_1.bin: a file, where cifar10 reads the folder" -- --set dataset.kind=cifar10 --set dataset.path="$G/cifar/data_batch_1.bin" --set dataset.make="cifar10 --per-class 3"
grep -q "making it" "$TMP/err" && bad "dataset.make over a batch file: $(head -c 300 "$TMP/err")" || ok
if ! grep -q "make-dataset" "$TMP/err"; then ok; else bad "a cifar10 batch file given as dataset.path got a make-dataset hint"; fi
for k in jpg png; do
    cp -r "$G/$k/train" "$B/e$k" && f=$(ls "$B/e$k/class_01/"* | head -1) && : >"$f"
    expect 2 "$f: empty file (0 bytes), expected a JPEG or PNG image" -- --set dataset.kind=folder --set dataset.path="$B/e$k"
    cp -r "$G/$k/train" "$B/s$k" && f=$(ls "$B/s$k/class_02/"* | head -1) && truncate -s 2 "$f"
    expect 2 "$f: truncated: 2 bytes, shorter than a" -- --set dataset.kind=folder --set dataset.path="$B/s$k"
done
# labels: a stray byte (255 among 0-3) would make 256 classes; refused naming
# the file and the index, unless model.out_features says how many classes
# there are (then a label from it up is refused); the same line for each kind
mkdir -p "$B/l255" && cp "$B"/train-* "$B/l255/" && printf '\xff' | dd of="$B/l255/train-labels-idx1-ubyte" bs=1 seek=$((8 + 17)) conv=notrunc 2>/dev/null
expect 2 "l255/train-labels-idx1-ubyte: index 17 (byte 25): label 255, but no sample has label 4" -- --set dataset.kind=idx --set dataset.path="$B/l255/train-images-idx3-ubyte"
expect 2 "l255/train-labels-idx1-ubyte: index 17 (byte 25): label 255, but no sample has label 4" -- --set dataset.kind=idx --set dataset.path="$B/l255/train-images-idx3-ubyte" --set model.out_features=10
expect 0 "# data: 40 x 784 -> 256" -- --set dataset.kind=idx --set dataset.path="$B/l255/train-images-idx3-ubyte" --set model.out_features=256 --set train.epochs=1
mkdir -p "$B/lgap" && cp "$B"/train-* "$B/lgap/" && /usr/bin/python3 -c "
import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[8:] = bytes(3 if x == 2 else x for x in b[8:]); open(p,'wb').write(b)" "$B/lgap/train-labels-idx1-ubyte"
expect 2 "lgap/train-labels-idx1-ubyte: index 2 (byte 10): label 3, but no sample has label 2" -- --set dataset.kind=idx --set dataset.path="$B/lgap/train-images-idx3-ubyte"
expect 0 "# data: 40 x 784 -> 4" -- --set dataset.kind=idx --set dataset.path="$B/lgap/train-images-idx3-ubyte" --set model.out_features=4 --set train.epochs=1
# a model.out_features below the classes found (every shipped config sets one
# for the random data) is replaced by them, as before
expect 0 "# data: 40 x 784 -> 4" -- -c configs/tutorial.yaml --set dataset.kind=idx --set dataset.path="$B/train-images-idx3-ubyte" --set train.epochs=1
expect 0 "# data: 60 x 3072 -> 12" -- --set dataset.kind=cifar10 --set dataset.path="$G/cifar" --set model.out_features=12 --set train.epochs=1
expect 0 "# data: 60 x 3072 -> 10" -- --set dataset.kind=cifar10 --set dataset.path="$G/cifar" --set model.out_features=5 --set train.epochs=1
expect 0 "# data: 24 x 3024 -> 5" -- --set dataset.kind=folder --set dataset.path="$G/jpg/train" --set model.out_features=5 --set train.epochs=1
mkdir -p "$B/l255e" && cp "$B"/train-* "$B/l255e/" && cp "$B/l255/train-labels-idx1-ubyte" "$B/l255e/t10k-labels-idx1-ubyte" && cp "$B/train-images-idx3-ubyte" "$B/l255e/t10k-images-idx3-ubyte"
expect 2 "dataset.eval_path: $B/l255e/t10k-labels-idx1-ubyte: index 17 (byte 25): label 255, but the training set has 4 classes" -- --set dataset.kind=idx --set dataset.path="$B/l255e/train-images-idx3-ubyte"
expect 2 "t10k-labels-idx1-ubyte: index 17 (byte 25): label 255, but the training set has 6 classes" -- --set dataset.kind=idx --set dataset.path="$B/l255e/train-images-idx3-ubyte" --set model.out_features=6
mkdir -p "$B/nolabels" && cp "$B/train-images-idx3-ubyte" "$B/nolabels/"
expect 2 "nolabels/train-labels-idx1-ubyte is missing" -- --set dataset.kind=idx --set dataset.path="$B/nolabels/train-images-idx3-ubyte"
# a gzip bomb (512 MiB of zeros behind a header declaring 10 images) is refused
# without being expanded; so is a gzip file whose header declares more than the
# machine's memory (its size unknown before it is read); a plain file that
# holds less than its header declares is truncated, however much that is
mkdir -p "$B/bomb" && cp "$B/train-labels-idx1-ubyte" "$B/bomb/" && printf '\x00\x00\x00\x0a' | dd of="$B/bomb/train-labels-idx1-ubyte" bs=1 seek=4 conv=notrunc 2>/dev/null && truncate -s 18 "$B/bomb/train-labels-idx1-ubyte"
{ printf '\x00\x00\x08\x03\x00\x00\x00\x0a\x00\x00\x00\x1c\x00\x00\x00\x1c'; head -c 536870912 /dev/zero; } | gzip -1 >"$B/bomb/train-images-idx3-ubyte.gz"
expect 2 "more than 7856 bytes, expected 7856" -- --set dataset.kind=idx --set dataset.path="$B/bomb/train-images-idx3-ubyte.gz"
if /usr/bin/time -f %M -o "$TMP/rss" "$BIN" --set dataset.kind=idx --set dataset.path="$B/bomb/train-images-idx3-ubyte.gz" >/dev/null 2>&1; [ "$(tail -n 1 "$TMP/rss")" -lt 200000 ]; then ok; else bad "the idx gzip bomb took $(tail -n 1 "$TMP/rss") KiB"; fi
printf '\x00\x00\x08\x03\xff\xff\xff\xff\x00\x00\x10\x00\x00\x00\x10\x00' >"$B/bomb/big-images-idx3-ubyte" && cp "$B/bomb/train-labels-idx1-ubyte" "$B/bomb/big-labels-idx1-ubyte"
expect 2 "big-images-idx3-ubyte: truncated: 16 bytes, expected 72057594021150736 for the 4294967295 images of 4096x4096" -- --set dataset.kind=idx --set dataset.path="$B/bomb/big-images-idx3-ubyte"
# (the memory estimate too: 2000 images of 4096x4096 declared, 16 bytes held)
printf '\x00\x00\x08\x03\x00\x00\x07\xd0\x00\x00\x10\x00\x00\x00\x10\x00' >"$B/bomb/mid-images-idx3-ubyte"
{ printf '\x00\x00\x08\x01\x00\x00\x07\xd0'; head -c 2000 /dev/zero; } >"$B/bomb/mid-labels-idx1-ubyte"
expect 2 "mid-images-idx3-ubyte: truncated: 16 bytes, expected 33554432016 for the 2000 images of 4096x4096" -- --set dataset.kind=idx --set dataset.path="$B/bomb/mid-images-idx3-ubyte"
gzip -c "$B/bomb/big-images-idx3-ubyte" >"$B/bomb/bigz-images-idx3-ubyte.gz" && cp "$B/bomb/train-labels-idx1-ubyte" "$B/bomb/bigz-labels-idx1-ubyte"
expect 2 "bigz-images-idx3-ubyte.gz: declares 4294967295 images of 4096x4096 (72057594021150736 bytes), more than this machine's memory" -- --set dataset.kind=idx --set dataset.path="$B/bomb/bigz-images-idx3-ubyte.gz"
# the memory estimate counts the arrays idx and cifar10 load, from the headers
# (a gzip file's decompressed size from the idx dims) and file sizes, before
# reading them: 100000 images of 64x64 (0.38 GiB, read through a buffer up to
# twice that) and 5 sparse CIFAR batches of 10000 records
mkdir -p "$B/est-idx" "$B/est-cifar"
printf '\x00\x00\x08\x03\x00\x01\x86\xa0\x00\x00\x00\x40\x00\x00\x00\x40' | gzip >"$B/est-idx/train-images-idx3-ubyte.gz"
{ printf '\x00\x00\x08\x01\x00\x01\x86\xa0'; head -c 100000 /dev/zero; } | gzip >"$B/est-idx/train-labels-idx1-ubyte.gz"
expect 2 "GiB of host memory (dataset 1.14," -- --set dataset.kind=idx --set dataset.path="$B/est-idx/train-images-idx3-ubyte.gz" --max-memory 1G
for k in 1 2 3 4 5; do truncate -s $((10000 * 3073)) "$B/est-cifar/data_batch_$k.bin"; done
expect 2 "GiB of host memory (dataset 0.29," -- --set dataset.kind=cifar10 --set dataset.path="$B/est-cifar" --max-memory 256M
head -c 40 "$G/idx/train-images-idx3-ubyte.gz" >"$B/bomb/cut-images-idx3-ubyte.gz" && cp "$B/bomb/train-labels-idx1-ubyte" "$B/bomb/cut-labels-idx1-ubyte"
expect 2 "cut-images-idx3-ubyte.gz: truncated gzip data" -- --set dataset.kind=idx --set dataset.path="$B/bomb/cut-images-idx3-ubyte.gz"
# gzip as Python's gzip module reads it: members one after another and zero
# bytes after one are the same data; anything else after the data is refused
# (zlib's gzread ignored it), and so is a bad CRC
gzv() { mkdir -p "$B/gz$1" && cp "$G/idx/train-labels-idx1-ubyte.gz" "$B/gz$1/"; echo "$B/gz$1/train-images-idx3-ubyte.gz"; }
zcat "$G/idx/train-images-idx3-ubyte.gz" >"$TMP/raw.idx"
{ head -c 1000 "$TMP/raw.idx" | gzip; head -c 9 /dev/zero; tail -c +1001 "$TMP/raw.idx" | gzip; head -c 3 /dev/zero; } >"$(gzv multi)"
{ cat "$G/idx/train-images-idx3-ubyte.gz"; printf 'junk'; } >"$(gzv junk)"
cp "$G/idx/train-images-idx3-ubyte.gz" "$(gzv crc)" && printf 'ÿ' | dd of="$(gzv crc)" bs=1 seek=$(($(stat -c %s "$(gzv crc)") - 8)) conv=notrunc 2>/dev/null
loss() { # one BLAS, one thread: the timed choice could differ between the runs, and their rounding
    "$BIN" --set dataset.kind=idx --set dataset.path="$1" --set train.epochs=2 --set parallel.blas=openblas \
        --set parallel.blas_threads=1 --format json 2>"$TMP/err" </dev/null |
    /usr/bin/python3 -c "import json,sys; print([e['loss'] for e in json.load(sys.stdin)['runs'][0]['epochs']])"; }
if [ "$(loss "$(gzv multi)")" = "$(loss "$G/idx/train-images-idx3-ubyte.gz")" ]; then ok
else bad "a two-member gzip file with zero padding: $(head -c 300 "$TMP/err")"; fi
n=$(stat -c %s "$G/idx/train-images-idx3-ubyte.gz")
expect 2 "gzjunk/train-images-idx3-ubyte.gz: trailing garbage after the gzip data (4 bytes from byte $n; Python's gzip module refuses it too)" -- --set dataset.kind=idx --set dataset.path="$(gzv junk)"
expect 2 "gzcrc/train-images-idx3-ubyte.gz: corrupt gzip data: incorrect data check" -- --set dataset.kind=idx --set dataset.path="$(gzv crc)"
# the file streams through a buffer: 512 MiB of zero padding (sparse) is read, not held
cp "$G/idx/train-images-idx3-ubyte.gz" "$(gzv pad)" && truncate -s +512M "$(gzv pad)"
if /usr/bin/time -f %M -o "$TMP/rss" "$BIN" --set dataset.kind=idx --set dataset.path="$(gzv pad)" --set train.epochs=1 >/dev/null 2>"$TMP/err" &&
    [ "$(tail -n 1 "$TMP/rss")" -lt 200000 ]; then ok
else bad "a gzip file with 512 MiB of zero padding: $(tail -n 1 "$TMP/rss") KiB, $(head -c 300 "$TMP/err")"; fi
rm -f "$(gzv pad)"
# --export over an earlier export: bad data exits 2 as training does, and the
# earlier export stays whole (the new one was being written beside it)
"$BIN" --export "$TMP/reex" --sweep seed=1,2 2>/dev/null
before=$(cat "$TMP/reex/export.json" "$TMP/reex"/point-00[01]/* | md5sum)
expect 2 "not an idx images file" -- --export "$TMP/reex" --set dataset.kind=idx --sweep dataset.path="$G/idx/train-images-idx3-ubyte.gz,$B/m2/train-images-idx3-ubyte"
if [ "$before" = "$(cat "$TMP/reex/export.json" "$TMP/reex"/point-00[01]/* | md5sum)" ] &&
    [ "$(ls -A "$TMP/reex")" = "$(printf 'export.json\npoint-000\npoint-001')" ]; then ok
else bad "a failed --export changed the earlier export: $(ls -A "$TMP/reex" "$TMP/reex/point-000")"; fi
# a smaller export over it leaves none of the earlier one's points beyond its own
# (a glob of point-* would mix the two); a folder of the user's own stays
mkdir "$TMP/reex/mine"
"$BIN" --export "$TMP/reex" 2>/dev/null
if [ "$(ls -A "$TMP/reex")" = "$(printf 'export.json\nmine\npoint-000')" ]; then ok
else bad "a smaller --export over an earlier one: $(ls -A "$TMP/reex")"; fi
# ... only what an export of dpbench's listed: beside another program's
# export.json a point-001 folder is the user's, and stays
mkdir -p "$TMP/other/point-001" && echo keep >"$TMP/other/point-001/mine.txt" &&
    echo '{"not": "dpbench"}' >"$TMP/other/export.json"
"$BIN" --export "$TMP/other" 2>/dev/null
if [ "$(cat "$TMP/other/point-001/mine.txt")" = keep ]; then ok
else bad "--export over another program's export.json removed point-001: $(ls -A "$TMP/other")"; fi
cp -r "$G/cifar" "$B/cifar" && truncate -s -1 "$B/cifar/data_batch_4.bin"
expect 2 "data_batch_4.bin: 36875 bytes is not a multiple of 3073" -- --set dataset.kind=cifar10 --set dataset.path="$B/cifar"
cp -r "$G/jpg/train" "$B/empty" && mkdir "$B/empty/class_03"
expect 2 "empty/class_03: empty class folder" -- --set dataset.kind=folder --set dataset.path="$B/empty"
# ImageFolder skips names without an image extension, refuses (here) those it
# would load but dpbench cannot decode, and walks the folders below a class
cp -r "$G/jpg/train" "$B/txt" && echo hello >"$B/txt/class_01/notes.txt"
expect 0 "# data: 24 x 3024 -> 3" -- --set dataset.kind=folder --set dataset.path="$B/txt" --set train.epochs=1
cp -r "$G/jpg/train" "$B/bmp" && echo BM >"$B/bmp/class_01/x.BMP"
expect 2 "bmp/class_01/x.BMP: torchvision's ImageFolder would load this image, but dpbench decodes only JPEG and PNG" -- --set dataset.kind=folder --set dataset.path="$B/bmp"
cp -r "$G/jpg/train" "$B/deep" && mkdir -p "$B/deep/class_02/a/b" && mv "$B/deep/class_00/000000.jpg" "$B/deep/class_02/a/b/"
expect 0 "# data: 24 x 3024 -> 3" -- --set dataset.kind=folder --set dataset.path="$B/deep" --set train.epochs=1
# folders nested at most 64 deep in a class: 65 are refused naming the limit,
# and 2030 (as deep as PATH_MAX allows; the walk's recursion crashed dpbench
# with SIGSEGV) are too
for depth in 64 65 2030; do
    rm -rf "$B/nest" && cp -r "$G/jpg/train" "$B/nest"
    sub=$(printf 'd/%.0s' $(seq $depth))
    mkdir -p "$B/nest/class_02/$sub"
    if [ $depth -eq 64 ]; then
        mv "$B/nest/class_00/000000.jpg" "$B/nest/class_02/$sub"
        expect 0 "# data: 24 x 3024 -> 3" -- --set dataset.kind=folder --set dataset.path="$B/nest" --set train.epochs=1
    else
        expect 2 "folders nested more than 64 deep in a class folder (the limit)" -- \
            --set dataset.kind=folder --set dataset.path="$B/nest" --set train.epochs=1
    fi
done
rm -rf "$B/nest"
# a symlink loop below a class folder is an error, not an endless walk
cp -r "$G/jpg/train" "$B/loop" && mkdir "$B/loop/class_01/sub" && ln -s .. "$B/loop/class_01/sub/up"
fifo_case() { # FRAGMENT ARGS...: exit 2 with the fragment, within a timeout
    local frag=$1; shift
    timeout 60 "$BIN" "$@" >/dev/null 2>"$TMP/err" </dev/null
    local rc=$?
    if [ $rc -eq 2 ] && grep -qF -- "$frag" "$TMP/err"; then ok; else bad "dpbench $* -> exit $rc: $(head -c 300 "$TMP/err")"; fi
}
fifo_case "loop/class_01/sub/up: a symlink loop (it is $B/loop/class_01 again)" --set dataset.kind=folder --set dataset.path="$B/loop"
cp -r "$G/jpg/train" "$B/fake" && echo hello >"$B/fake/class_01/000003.jpg"
expect 2 "fake/class_01/000003.jpg: not a JPEG or PNG image" -- --set dataset.kind=folder --set dataset.path="$B/fake"
cp -r "$G/jpg/train" "$B/link" && ln -s "$B/nowhere.jpg" "$B/link/class_02/zz.jpg"
expect 2 "link/class_02/zz.jpg: cannot open: No such file or directory" -- --set dataset.kind=folder --set dataset.path="$B/link"
# a FIFO where a data file belongs is refused, not opened (the open would block:
# hence the timeout)
cp -r "$G/jpg/train" "$B/fifo" && mkfifo "$B/fifo/class_01/zz.jpg"
fifo_case "fifo/class_01/zz.jpg: not a regular file" --set dataset.kind=folder --set dataset.path="$B/fifo"
mkdir -p "$B/fifo-idx" && mkfifo "$B/fifo-idx/train-images-idx3-ubyte" "$B/fifo-idx/train-labels-idx1-ubyte"
fifo_case "fifo-idx/train-images-idx3-ubyte: not a regular file" --set dataset.kind=idx --set dataset.path="$B/fifo-idx/train-images-idx3-ubyte"
mkdir -p "$B/fifo-cifar" && mkfifo "$B/fifo-cifar/data_batch_1.bin"
fifo_case "data_batch_1.bin: not a regular file" --set dataset.kind=cifar10 --set dataset.path="$B/fifo-cifar"
cp -r "$G/jpg/train" "$B/mixed" && cp "$G/png/train/class_00/000001.png" "$B/mixed/class_00/"
expect 2 "images of different sizes need transform.resize" -- --set dataset.kind=folder --set dataset.path="$B/mixed"
expect 0 "# data: 25 x 432" -- --set dataset.kind=folder --set dataset.path="$B/mixed" --set transform.resize=12
# decompression bombs (PIL's limit): a PNG and a JPEG declaring 20000 x 20000
# pixels are refused from their headers, nothing allocated for them
cp -r "$G/jpg/train" "$B/bomb-png" && cp -r "$G/jpg/train" "$B/bomb-jpg"
/usr/bin/python3 - "$B/bomb-png/class_00/zz.png" "$B/bomb-jpg/class_00/000001.jpg" <<'PY'
import struct, sys, zlib
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
hdr = struct.pack(">IIBBBBB", 20000, 20000, 8, 0, 0, 0, 0)
open(sys.argv[1], "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", hdr) +
                              chunk(b"IDAT", zlib.compress(b"\0" * 20001)) + chunk(b"IEND", b""))
j = bytearray(open(sys.argv[2], "rb").read())
k = next(i for i in range(len(j) - 1) if j[i] == 0xFF and j[i + 1] in (0xC0, 0xC2))
j[k + 5:k + 9] = struct.pack(">HH", 20000, 20000)  # SOF: height, width
open(sys.argv[2], "wb").write(j)
PY
expect 2 "zz.png: 20000x20000 is more than 178956970 pixels" -- --set dataset.kind=folder --set dataset.path="$B/bomb-png" --set transform.resize=8
expect 2 "000001.jpg: 20000x20000 is more than 178956970 pixels" -- --set dataset.kind=folder --set dataset.path="$B/bomb-jpg" --set transform.resize=8
expect 2 "dataset.eval_path" -- --set dataset.kind=folder --set dataset.path="$G/jpg/train" --set dataset.eval_path="$G/png/train"

# ---- a corrupt image met by a worker mid-epoch: exit 1 naming it, partial results kept
for kind in jpg png; do
    cp -r "$G/$kind/train" "$B/c$kind"
    f=$(ls "$B/c$kind/class_01/"* | head -1)
    truncate -s $(( $(stat -c %s "$f") * 2 / 3 )) "$f"
    "$BIN" --set dataset.kind=folder --set dataset.path="$B/c$kind" --set loader.num_workers=2 \
        --format json --out "$TMP/res$kind" >"$TMP/r.json" 2>"$TMP/err" </dev/null
    rc=$?
    if [ $rc -eq 1 ] && grep -qF "$f: corrupt" "$TMP/err" && json 'd["interrupted"] and d["runs"][0]["failed"] and "corrupt" in d["runs"][0]["stopped"]' "$TMP/r.json" &&
        ls "$TMP/res$kind"/*.json >/dev/null 2>&1; then ok
    else bad "corrupt $kind mid-epoch: exit $rc, $(head -c 400 "$TMP/err")"; fi
done

# ---- a corrupt image in the eval split (its header sound): exit 1 naming it, every
# epoch kept and written, the eval not reported (all results were lost)
cp -r "$G/jpg/val" "$B/cval"
f=$(ls "$B/cval/class_01/"* | head -1)
truncate -s $(( $(stat -c %s "$f") * 2 / 3 )) "$f"
"$BIN" --set dataset.kind=folder --set dataset.path="$G/jpg/train" --set dataset.eval_path="$B/cval" \
    --set train.epochs=2 --format json --out "$TMP/reseval" >"$TMP/r.json" 2>"$TMP/err" </dev/null
rc=$?
if [ $rc -eq 1 ] && grep -qF "evaluation: $f: corrupt" "$TMP/err" && ls "$TMP/reseval"/*.json >/dev/null 2>&1 &&
    json 'd["runs"][0]["failed"] and len(d["runs"][0]["epochs"]) == 2 and not d["runs"][0]["eval"] and "eval split is not reported" in d["runs"][0]["stopped"]' "$TMP/r.json"; then ok
else bad "corrupt eval image: exit $rc, $(head -c 400 "$TMP/err")"; fi

# ---- an eval split of as many pixels in another shape (16x16 against 32x8): refused
"$BIN" --make-dataset folder "$B/s16" --classes 3 --per-class 2 --size 16x16 >/dev/null
"$BIN" --make-dataset folder "$B/s32" --classes 3 --per-class 2 --size 32x8 >/dev/null
expect 2 "dataset.eval_path $B/s32/val: its samples are 32x8 (width x height, after the transforms), the training set's 16x16" -- \
    --set dataset.kind=folder --set dataset.path="$B/s16/train" --set dataset.eval_path="$B/s32/val"

# ---- a chain of folders each linking twice to the next (2^12 folders to walk): refused
# at once; a folder two links reach is read twice, as in torchvision
cp -r "$B/s16/train" "$B/chain"
for i in $(seq 0 12); do mkdir -p "$B/lv/a$i"; done
for i in $(seq 0 11); do ln -s "../a$((i + 1))" "$B/lv/a$i/x"; ln -s "../a$((i + 1))" "$B/lv/a$i/y"; done
ln -s "$B/lv/a0" "$B/chain/class_00/deep"
expect 2 "symlinks reach this folder more than 8 times" -- --set dataset.kind=folder --set dataset.path="$B/chain"
rm "$B/chain/class_00/deep"
ln -s "$B/s16/train/class_01" "$B/chain/class_00/l1"; ln -s "$B/s16/train/class_01" "$B/chain/class_00/l2"
expect 0 "data: 10 x 768 -> 3" -- --set dataset.kind=folder --set dataset.path="$B/chain" --set train.epochs=1

# ---- an image file far larger than its pixels can need (data after its end, read whole
# for every sample): refused up front (a 3 GB one took 3 GB a sample past --max-memory)
cp -r "$B/s16/train" "$B/trail"
f=$(ls "$B/trail/class_00/"* | head -1)
truncate -s 100M "$f"
expect 2 "$f: 104857600 bytes, more than a 16x16 image can need (67112960): data after the image's end?" -- \
    --set dataset.kind=folder --set dataset.path="$B/trail"
rm -rf "$B/trail"

# ---- a note where a dataset's root is given for a split (its classes: train, val, test)
mkdir -p "$B/s16/test" && cp -r "$B/s16/val/class_00" "$B/s16/test/"
expect 0 "note: $B/s16's classes are named as a dataset's splits (\"train\", \"test\"): its root?" -- \
    --set dataset.kind=folder --set dataset.path="$B/s16" --set train.epochs=1
rm -rf "$B/s16/test"
# ... and where the training split has one class (torchvision takes it: every label 0)
mkdir -p "$B/one" && cp -r "$B/s16/train/class_00" "$B/one/"
expect 0 "note: $B/one has one class folder ('class_00'): every sample is class 0" -- \
    --set dataset.kind=folder --set dataset.path="$B/one" --set train.epochs=1
rm -rf "$B/one"

# ---- a sweep point with bad data: transforms that cannot apply are refused before any
# point runs, whatever the order; a file found bad when its point's data is loaded (a
# small folder is decoded up front) names the point, and what the points before it
# measured is written marked cut short (interrupted)
"$BIN" --make-dataset folder "$B/tiny" --classes 3 --per-class 4 --size 8x8 >/dev/null
cp -r "$B/tiny/train" "$B/tinybad"
f=$(ls "$B/tinybad/class_01/"* | head -1)
truncate -s $(( $(stat -c %s "$f") / 2 )) "$f"
for seed in 0 1 2; do
    expect 2 "sweep point transform.resize=8 transform.crop=20: transform.crop: 20 is larger than" -- \
        --set seed=$seed --set dataset.kind=folder --set dataset.path="$G/jpg/train" \
        --sweep transform.resize=0,8 --sweep transform.crop=0,20 --repeat 1
    rm -rf "$TMP/swbad"
    "$BIN" --set seed=$seed --set dataset.kind=folder --set dataset.path="$B/tiny/train" --repeat 1 \
        --sweep dataset.path="$B/tinybad,$B/tiny/train" --out "$TMP/swbad" >/dev/null 2>"$TMP/err" </dev/null
    rc=$?
    if [ $rc -eq 2 ] && grep -qF "sweep point dataset.path=$B/tinybad: $f: corrupt JPEG" "$TMP/err" &&
        { ! ls "$TMP/swbad"/*.json >/dev/null 2>&1 || json 'd["interrupted"] and len(d["runs"]) == 1' "$TMP"/swbad/*.json; }
    then ok; else bad "a sweep point with a corrupt file (seed $seed): exit $rc, $(head -c 400 "$TMP/err")"; fi
done

# ---- commands that write files leave nothing partial: a full disk (a 200 KiB
# tmpfs), a file size limit (EFBIG) and a signal each leave the target as it
# was, and the same command then works
none_left() { # DIR [EXPECTED-LS]: DIR holds exactly EXPECTED-LS (default: nothing)
    local got; got=$(ls -A "$1" 2>/dev/null)
    if [ "$got" = "${2:-}" ]; then ok; else bad "left in $1: $got $(find "$1" | head -5)"; fi
}
FULL=$TMP/full
mkdir -p "$FULL"
if mount -t tmpfs -o size=200k tmpfs "$FULL" 2>/dev/null; then
    trap 'umount "$FULL" 2>/dev/null; rm -rf "$TMP"' EXIT
    for args in "idx $FULL --per-class 50" "folder $FULL/f --per-class 30 --size 64x64" \
        "cifar10 $FULL/c/d --per-class 10" "idx $FULL/gz --per-class 60 --gzip" \
        "folder $FULL --per-class 20 --format png --size 40x40"; do
        expect 1 "(nothing written to $FULL" -- --make-dataset $args
        none_left "$FULL"
    done
    # the rerun is not refused as "not empty": the failed run left nothing
    expect 0 "wrote a folder dataset" -- --make-dataset folder "$FULL/f" --per-class 2 --classes 2
    expect 0 "wrote an idx dataset" -- --make-dataset idx "$FULL" --per-class 2 --classes 2
    none_left "$FULL" "$(printf 'f\nt10k-images-idx3-ubyte\nt10k-labels-idx1-ubyte\ntrain-images-idx3-ubyte\ntrain-labels-idx1-ubyte')"
    rm -rf "${FULL:?}"/*
    # --export: no config.json without its data, and an earlier export stays whole
    expect 1 "No space left on device (nothing exported to $FULL/e)" -- --export "$FULL/e" --set dataset.length=20000
    none_left "$FULL"
    "$BIN" --export "$FULL/e" --set dataset.length=100 2>/dev/null
    before=$(cat "$FULL/e/export.json" "$FULL/e/point-000"/* | md5sum)
    expect 1 "No space left on device (nothing exported to $FULL/e)" -- --export "$FULL/e" --sweep seed=1,2 --set dataset.length=9000
    if [ "$before" = "$(cat "$FULL/e/export.json" "$FULL/e/point-000"/* | md5sum)" ]; then ok; else bad "a failed --export changed the earlier one"; fi
    none_left "$FULL/e" "$(printf 'export.json\npoint-000')"
    rm -rf "${FULL:?}"/*
    # --out: the results stay on stdout, no file (nor temporary) is left
    head -c 190K /dev/zero >"$FULL/fill"
    expect 1 "result files not written (results are on stdout)" -- --out "$FULL/o" --set train.epochs=200 --set dataset.length=10 --set loader.batch_size=1
    if grep -q "verdict" "$TMP/out"; then ok; else bad "--out on a full disk: no results on stdout"; fi
    none_left "$FULL/o"
    cat /dev/zero >"$FULL/fill2" 2>/dev/null # no byte left
    expect 1 "the table is not written to report.out (it is on stdout)" -- --allreduce-bandwidth --out "$FULL/ab"
    if grep -q "^# one rank: busbw is 0" "$TMP/out"; then ok; else bad "--allreduce-bandwidth on a full disk: no table on stdout"; fi
    none_left "$FULL/ab"
    umount "$FULL"
else
    echo "skipped: full-disk cases (mount -t tmpfs is not allowed here)"
fi
L=$TMP/limit
mkdir -p "$L"
for args in "idx $L/a --per-class 50" "cifar10 $L/b/c --per-class 50" "idx $L --per-class 30 --gzip"; do
    bash -c 'ulimit -f 100; exec "$@"' - "$BIN" --make-dataset $args >/dev/null 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 1 ] && grep -q "File too large" "$TMP/err"; then ok; else bad "ulimit -f, --make-dataset $args: exit $rc: $(cat "$TMP/err")"; fi
    none_left "$L"
done
bash -c 'ulimit -f 100; exec "$@"' - "$BIN" --export "$L/e" --set dataset.length=20000 >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "File too large: the file-size limit (RLIMIT_FSIZE, ulimit -f) is 102400 bytes; raise it (nothing exported" "$TMP/err"; then ok; else bad "ulimit -f, --export: exit $rc: $(cat "$TMP/err")"; fi
none_left "$L"
# a signal mid-write: exit 128 + signal, nothing left
for sig in TERM INT HUP; do
    "$BIN" --make-dataset folder "$L/s/$sig" --per-class 100000 --size 64x64 >/dev/null 2>"$TMP/err" &
    pid=$!
    for i in $(seq 100); do [ -n "$(find "$L" -name '*.jpg' 2>/dev/null | head -1)" ] && break; sleep 0.1; done
    kill -$sig $pid
    for i in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
    kill -KILL $pid 2>/dev/null && echo "SIG$sig did not end --make-dataset within 10 s" >>"$TMP/err"
    wait $pid
    rc=$?
    if [ $rc -eq $((128 + $(kill -l $sig))) ] && grep -q "interrupted by SIG$sig; nothing written to $L/s/$sig" "$TMP/err"; then ok
    else bad "SIG$sig during --make-dataset: exit $rc: $(cat "$TMP/err")"; fi
    none_left "$L"
done

# under nohup (SIGHUP ignored when it starts) a SIGHUP is ignored, as nohup asks;
# python, not the python3 function (a subshell: its pid would be the one signalled)
"${PYTHON:-/usr/bin/python3}" -c 'import os, signal, sys
signal.signal(signal.SIGHUP, signal.SIG_IGN)
os.execvp(sys.argv[1], sys.argv[1:])' "$BIN" --make-dataset folder "$L/nohup" --per-class 40 \
    --size 64x64 >/dev/null 2>"$TMP/err" &
pid=$!
for i in $(seq 100); do [ -n "$(find "$L" -path '*nohup*' -name '*.jpg' 2>/dev/null | head -1)" ] && break; sleep 0.1; done
kill -HUP $pid 2>/dev/null
wait $pid
rc=$?
if [ $rc -eq 0 ] && [ -d "$L/nohup/train" ]; then ok; else bad "SIGHUP under nohup ended --make-dataset: exit $rc: $(cat "$TMP/err")"; fi

# SIGKILL cannot be caught: its staging folder stays, and the next run into
# the same place removes it (its process is gone) and works
for d in "$L/k/new" "$L/k"; do
    mkdir -p "$L/k"
    "$BIN" --make-dataset folder "$d" --per-class 100000 >/dev/null 2>&1 &
    pid=$!
    for i in $(seq 100); do [ -n "$(find "$L/k" -name '*.jpg' 2>/dev/null | head -1)" ] && break; sleep 0.1; done
    kill -KILL $pid
    wait $pid 2>/dev/null
    expect 0 "wrote a folder dataset to $d" -- --make-dataset folder "$d" --per-class 1 --classes 2
    if [ -z "$(find "$L" -name '*dpbench-stage*')" ]; then ok; else bad "a killed run's staging folder stayed: $(find "$L" -name '*dpbench-stage*')"; fi
done

# ---- the real Fashion-MNIST, when Debian's package is installed: a short run
if [ -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    if run_json -c configs/fashion-mnist.yaml --set train.epochs=2 &&
        json 'd["runs"][0]["eval"]["samples"] == 10000 and d["runs"][0]["eval"]["accuracy"] >= 0.82' "$TMP/r.json"; then ok
    else bad "fashion-mnist, 2 epochs: $(head -c 300 "$TMP/err") $(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runs"][0]["eval"])' "$TMP/r.json" 2>&1)"; fi
else
    echo "skipped: fashion-mnist (apt-get install dataset-fashion-mnist)"
fi
expect 2 "apt-get install dataset-fashion-mnist" -- -c configs/fashion-mnist.yaml --set dataset.path=/usr/share/datasets/fashion-mnist/nothing-images-idx3-ubyte.gz

# every result file this test wrote follows docs/result.schema.json
if python3 scripts/validate_result.py --described --skip-other $(find "$TMP" -name '*.json') >"$TMP/schema.out" 2>&1
then ok; else bad "result schema: $(head -20 "$TMP/schema.out")"; fi

echo "data-cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
